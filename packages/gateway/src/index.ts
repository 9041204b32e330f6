/** The operator contract: settings from the environment. */
export * as Config from "./Config.js"
/** The gateway as layers: the server, or its services without background fibers. */
export * as Gateway from "./Gateway.js"
/** Durable tasks: store, leases, compare-and-set updates, events. */
export * as TaskStore from "./TaskStore.js"
/** The workers that submit, poll, mirror and finish tasks. */
export * as Scheduler from "./Scheduler.js"
/** Result media, signed URLs and retention. */
export * as MediaStore from "./MediaStore.js"
/** Bearer tokens and tenants. */
export * as ApiKeys from "./ApiKeys.js"
/** The sandbox vendor. */
export * as Sandbox from "./Sandbox.js"
/** Which adapter serves each vendor. */
export * as Vendors from "./Vendors.js"
/** The `genway` command. */
export * as Cli from "./Cli.js"
