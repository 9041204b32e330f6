/**
 * `genway keys create|list|update|rotate|revoke`, reading the database like the server does
 * (DESIGN.md §9). Flags take the admin API's fields; on `update`, `none` clears a limit.
 * `--tenant` must name a tenant that exists (one with a key or a budget), so a typo does not make
 * a new tenant silently; `--new-tenant NAME` makes one on purpose.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Registry } from "@genway/registry"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Shared from "./Shared.js"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Fields from "../admin/Fields.js"
import * as ApiKeys from "../platform/ApiKeys.js"
import * as Config from "../platform/Config.js"
import * as Database from "../platform/Database.js"
import * as Models from "../platform/Models.js"

/** A mistake in the command line; printed as its message alone. */
export class KeysCliError extends Data.TaggedError("KeysCliError")<{ readonly message: string }> {
  constructor(args: { readonly message: string }) {
    super(args)
    this.stack = `Error: ${args.message}`
  }
}

const keysLayer = Layer.mergeAll(ApiKeys.layer, Models.layer).pipe(
  Layer.provideMerge(Database.layer),
  Layer.provideMerge(Shared.announceDatabase),
  Layer.provideMerge(Config.layer)
)

const text = (name: string, description: string) => Options.text(name).pipe(Options.optional, Options.withDescription(description))

const limitFlags = {
  name: text("name", "a label for the key"),
  models: text("models", "comma-separated entry ids as /v1/models lists them, * wildcards (e.g. vendor-b/*); `none`: every model"),
  rpm: text("rpm", "requests per minute over every route; `none`: unlimited"),
  maxInFlight: text("max-in-flight", "tasks pending or processing at once; `none`: unlimited"),
  expiresAt: text("expires-at", "ISO 8601 time after which the key is refused (401); `none`: never"),
  budgetUsd: text("budget-usd", "budget in US dollars, enforced by the usage ledger; `none`: no budget"),
  budgetPeriod: text("budget-period", "day, month or total")
}

type LimitFlags = { readonly [K in keyof typeof limitFlags]: Option.Option<string> }

/** The flags given, as the admin API's JSON fields (so both are checked by the same code). */
const toJson = (flags: LimitFlags): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  const put = (wire: string, v: Option.Option<string>, parse: (raw: string) => unknown) => {
    if (Option.isNone(v)) return
    const raw = v.value.trim()
    out[wire] = raw === "none" ? null : parse(raw)
  }
  const num = (raw: string) => (/^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw)
  put("name", flags.name, (s) => s)
  put("models", flags.models, (s) => s.split(",").map((m) => m.trim()).filter((m) => m.length > 0))
  put("rpm", flags.rpm, num)
  put("max_in_flight", flags.maxInFlight, num)
  put("expires_at", flags.expiresAt, (s) => s)
  put("budget_usd", flags.budgetUsd, num)
  put("budget_period", flags.budgetPeriod, (s) => s)
  return out
}

const flagOf: Record<string, string> = {
  name: "--name",
  models: "--models",
  rpm: "--rpm",
  max_in_flight: "--max-in-flight",
  expires_at: "--expires-at",
  budget_usd: "--budget-usd",
  budget_period: "--budget-period"
}

const checkFlags = (flags: LimitFlags) =>
  Effect.gen(function*() {
    const registry = yield* Registry.Registry
    const now = yield* Clock.currentTimeMillis
    const fields = Fields.checkFields(toJson(flags), { entries: registry.entries, now })
    if (Fields.isIssue(fields)) {
      const flag = flagOf[fields.param.replace(/\[\d+\]$/, "")] ?? fields.param
      return yield* new KeysCliError({ message: `${flag}: ${fields.message}` })
    }
    return fields
  })

const show = (v: unknown) => (v === null || v === undefined ? "-" : Array.isArray(v) ? v.join(",") : String(v))

const describeKey = (k: ApiKeys.KeyInfo) =>
  [
    `id:            ${k.id}`,
    `tenant:        ${k.tenant}`,
    `name:          ${show(k.name)}`,
    `models:        ${k.models === null ? "all" : k.models.join(",")}`,
    `rpm:           ${show(k.rpm)}`,
    `max-in-flight: ${show(k.maxInFlight)}`,
    `expires-at:    ${k.expiresAt === null ? "never" : new Date(k.expiresAt).toISOString()}`,
    `budget:        ${k.budgetUsd === null ? "-" : `${k.budgetUsd} USD per ${k.budgetPeriod ?? "month"}`}`
  ].join("\n")

const create = Command.make(
  "create",
  {
    ...limitFlags,
    tenant: text("tenant", "an existing tenant the key acts for; keys of one tenant see the same tasks (default: a new tenant)"),
    newTenant: text("new-tenant", "make a new tenant with this name for the key")
  },
  (flags) =>
    Effect.gen(function*() {
      const keys = yield* ApiKeys.ApiKeys
      const fields = yield* checkFlags(flags)
      let tenant: string | undefined
      if (Option.isSome(flags.tenant) && Option.isSome(flags.newTenant)) {
        return yield* new KeysCliError({ message: "give --tenant (an existing tenant) or --new-tenant (a new one), not both" })
      }
      if (Option.isSome(flags.tenant)) {
        tenant = flags.tenant.value
        if (!(yield* keys.tenantExists(tenant))) {
          return yield* new KeysCliError({
            message: `--tenant: no tenant ${tenant} exists; check the name (genway keys list), or pass --new-tenant ${tenant} to make it`
          })
        }
      } else if (Option.isSome(flags.newTenant)) {
        const checked = Fields.checkTenant(flags.newTenant.value, "--new-tenant")
        if (typeof checked !== "string") return yield* new KeysCliError({ message: `--new-tenant: ${checked.message}` })
        if (yield* keys.tenantExists(checked)) {
          return yield* new KeysCliError({ message: `--new-tenant: the tenant ${checked} already exists; use --tenant ${checked}` })
        }
        tenant = checked
      }
      const made = yield* keys.create({
        ...fields,
        ...(fields.budgetUsd != null && fields.budgetPeriod == null ? { budgetPeriod: "month" as const } : {}),
        tenant
      })
      yield* Console.log(`${describeKey(made.info)}\ntoken:         ${Redacted.value(made.token)}\n\nThe token is shown only now; store it safely.`)
    }).pipe(Effect.provide(keysLayer))
).pipe(Command.withDescription("Create an API key with optional scopes and limits; prints its token once."))

const list = Command.make("list", {}, () =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const all = yield* keys.list
    if (all.length === 0) return yield* Console.log("no keys")
    for (const k of all) {
      const limits = [
        k.models !== null ? `models=${k.models.join(",")}` : "",
        k.rpm !== null ? `rpm=${k.rpm}` : "",
        k.maxInFlight !== null ? `max-in-flight=${k.maxInFlight}` : "",
        k.expiresAt !== null ? `expires=${new Date(k.expiresAt).toISOString()}` : "",
        k.budgetUsd !== null ? `budget=${k.budgetUsd}/${k.budgetPeriod ?? "month"}` : ""
      ].filter((s) => s !== "").join("  ")
      yield* Console.log(
        `${k.id}  tenant=${k.tenant}  prefix=${k.prefix}…  created=${new Date(k.createdAt).toISOString()}` +
          `${k.name ? `  name=${k.name}` : ""}${limits ? `  ${limits}` : ""}` +
          `${k.revokedAt ? `  REVOKED ${new Date(k.revokedAt).toISOString()}` : ""}`
      )
    }
  }).pipe(Effect.provide(keysLayer))).pipe(Command.withDescription("List API keys (never their tokens)."))

const update = Command.make("update", { id: Args.text({ name: "id" }), ...limitFlags }, ({ id, ...flags }) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const fields = yield* checkFlags(flags)
    if (Object.keys(fields).length === 0) {
      return yield* new KeysCliError({ message: "nothing to change: give at least one of --name --models --rpm --max-in-flight --expires-at --budget-usd --budget-period" })
    }
    const updated = yield* keys.update(id, fields)
    if (Option.isNone(updated)) return yield* new KeysCliError({ message: `no active key ${id}; \`genway keys list\` shows the keys` })
    yield* Console.log(describeKey(updated.value))
  }).pipe(Effect.provide(keysLayer))).pipe(
    Command.withDescription("Change a key's scopes and limits (only the flags given; `none` clears one). Servers apply it within 5 s.")
  )

const rotate = Command.make(
  "rotate",
  {
    id: Args.text({ name: "id" }),
    graceSeconds: Options.integer("grace-seconds").pipe(
      Options.withDefault(0),
      Options.withDescription("how long the old token keeps working (default 0: it stops now)")
    )
  },
  ({ graceSeconds, id }) =>
    Effect.gen(function*() {
      if (graceSeconds < 0 || graceSeconds > 30 * 24 * 3600) {
        return yield* new KeysCliError({ message: "--grace-seconds: must be an integer from 0 to 2592000" })
      }
      const keys = yield* ApiKeys.ApiKeys
      const rotated = yield* keys.rotate(id, graceSeconds)
      if (Option.isNone(rotated)) return yield* new KeysCliError({ message: `no active key ${id}; \`genway keys list\` shows the keys` })
      yield* Console.log(
        `id:    ${id}\ntoken: ${Redacted.value(rotated.value.token)}\nthe old token works until ${
          new Date(rotated.value.previousTokenExpiresAt).toISOString()
        }\n\nThe token is shown only now; store it safely.`
      )
    }).pipe(Effect.provide(keysLayer))
).pipe(Command.withDescription("Give a key a new token; the old one keeps working for --grace-seconds."))

const revoke = Command.make("revoke", { id: Args.text({ name: "id" }) }, ({ id }) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const done = yield* keys.revoke(id)
    if (!done) return yield* new KeysCliError({ message: `no active key ${id}; \`genway keys list\` shows the keys` })
    yield* Console.log(`revoked ${id}`)
  }).pipe(Effect.provide(keysLayer))).pipe(Command.withDescription("Revoke an API key."))

/** `genway keys …`. */
export const command = Command.make("keys").pipe(
  Command.withSubcommands([create, list, update, rotate, revoke]),
  Command.withDescription(Shared.withSubcommandList("keys", "Manage API keys: scopes, limits, rotation.", [create, list, update, rotate, revoke]))
)
