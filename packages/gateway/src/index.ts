/** The operator contract: settings from the environment. */
export * as Config from "./platform/Config.js"
/** The gateway as layers: the server, or its services without background fibers. */
export * as Gateway from "./Gateway.js"
/** Durable tasks: store, leases, compare-and-set updates, events. */
export * as TaskStore from "./tasks/Store.js"
/** The workers that submit, poll, mirror and finish tasks. */
export * as Scheduler from "./tasks/Scheduler.js"
/** Result media, signed URLs and retention. */
export * as MediaStore from "./platform/MediaStore.js"
/** Bearer tokens and tenants. */
export * as ApiKeys from "./platform/ApiKeys.js"
/** The sandbox vendor. */
export * as Sandbox from "./tasks/Sandbox.js"
/** Which adapter serves each vendor. */
export * as Vendors from "./vendors/Vendors.js"
/** The `genway` command. */
export * as Cli from "./cli/Cli.js"
