/** The all-or-none config contract as runner-independent test cases. */
export * as ConfigCases from "./ConfigCases.js"
/** Test entries and tasks. */
export * as Fixtures from "./Fixtures.js"
/** The emulator server scaffold: request log, fault queues, replies, transport faults. */
export * as Server from "./Server.js"
/** The task adapter contract (faults, retries, unknown states, no secret in errors) as shared cases. */
export * as ContractCases from "./ContractCases.js"
