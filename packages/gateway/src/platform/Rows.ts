/**
 * What the two leased tables (tasks and kept responses) share: how a row's numbers are decoded
 * (SQLite gives numbers, PostgreSQL gives `BIGINT` as text) and the one query that leases due rows
 * to a worker, with `FOR UPDATE SKIP LOCKED` on PostgreSQL so replicas never take the same row.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import type { ParseError } from "effect/ParseResult"
import * as Schema from "effect/Schema"

/**
 * A column schema that reads a driver's value with `read` (`undefined`: not a value of the column).
 *
 * The column schemas below are declared this way rather than composed (`Union(Number,
 * NumberFromString)`, `optionalWith(NullOr(String), { default })`): a task row has eighteen such
 * columns, and the composed forms made decoding one row cost about 18 µs against about 6 µs now
 * (`pnpm bench` polls decode one row per poll).
 */
const column = <A, I>(identifier: string, description: string, read: (u: unknown) => A | undefined): Schema.Schema<A, I> =>
  Schema.declare<A, I, readonly []>([], {
    decode: () => (u, _, ast) => {
      const a = read(u)
      return a === undefined ? ParseResult.fail(new ParseResult.Type(ast, u, `expected ${description}`)) : ParseResult.succeed(a)
    },
    encode: () => (a) => ParseResult.succeed(a as unknown as I)
  }, { identifier, description })

/** A number (SQLite) or its decimal text (PostgreSQL `BIGINT`). */
const number = (u: unknown): number | undefined => {
  if (typeof u === "number") return u
  if (typeof u !== "string" || u.trim() === "") return undefined
  const n = Number(u)
  return Number.isNaN(n) ? undefined : n
}

/** A number column: a number (SQLite) or its decimal text (PostgreSQL `BIGINT`). */
export const Num = column<number, number | string>("Num", "a number or its decimal text", number)

/** A nullable number column (`undefined` from a driver counts as `NULL`). */
export const NumOrNull = column<number | null, number | string | null>(
  "NumOrNull",
  "a number, its decimal text or NULL",
  (u) => (u === null || u === undefined ? null : number(u))
)

/** A nullable text column (`undefined` from a driver counts as `NULL`). */
export const TextOrNull = column<string | null, string | null>(
  "TextOrNull",
  "text or NULL",
  (u) => (u === null || u === undefined ? null : typeof u === "string" ? u : undefined)
)

/** `FOR UPDATE SKIP LOCKED` where the dialect has it (PostgreSQL); nothing on SQLite's one writer. */
export const skipLocked = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

/**
 * Leases up to `limit` rows of `table` that are due (`due` holds, oldest `order` first) and not
 * leased, to `owner` until `now + leaseMs`; returns the leased rows as the database has them.
 */
export const claimDue = (
  sql: SqlClient.SqlClient,
  table: "tasks" | "responses",
  due: { readonly where: Statement.Fragment; readonly order: string },
  owner: string,
  now: number,
  leaseMs: number,
  limit: number
): Effect.Effect<ReadonlyArray<unknown>, SqlError> =>
  sql`UPDATE ${sql(table)} SET lease_owner = ${owner}, lease_until = ${now + leaseMs}, version = version + 1
    WHERE id IN (
      SELECT id FROM ${sql(table)}
      WHERE ${due.where} AND (lease_until IS NULL OR lease_until < ${now})
      ORDER BY ${sql(due.order)} LIMIT ${limit}
      ${skipLocked(sql)}
    )
    RETURNING *`

/** A row that does not decode is a broken database, not a request's fault: a defect. */
export const orDieOnParse = <A, E, R>(effect: Effect.Effect<A, E | ParseError, R>): Effect.Effect<A, Exclude<E, ParseError>, R> =>
  Effect.catchIf(effect, (e): e is ParseError => (e as { _tag?: unknown })?._tag === "ParseError", (e) => Effect.die(e)) as Effect.Effect<
    A,
    Exclude<E, ParseError>,
    R
  >

/**
 * How a table's rows are read: `all` decodes every row a statement returns with `Row`, `one` the
 * first, each then turned into the store's type by `to`. A row that does not decode is a defect.
 * The decoders are built once per row schema: building them per call (as `SqlSchema.findAll` does)
 * cost about 30 µs per statement, four times the decoding of a task row itself.
 */
export const decoder = <A, I, T>(Row: Schema.Schema<A, I>, to: (row: A) => T) => {
  const decodeAll = Schema.decodeUnknown(Schema.Array(Row))
  const decodeOne = Schema.decodeUnknown(Row)
  return {
    all: <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<Array<T>, Exclude<E, ParseError>, R> =>
      statement.pipe(
        Effect.flatMap((rows) => decodeAll(rows)),
        Effect.map((rows) => rows.map(to)),
        orDieOnParse
      ),
    one: <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<Option.Option<T>, Exclude<E, ParseError>, R> =>
      statement.pipe(
        Effect.flatMap((rows) => (rows.length === 0 ? Effect.succeed(Option.none<T>()) : Effect.map(decodeOne(rows[0]), (row) => Option.some(to(row))))),
        orDieOnParse
      )
  }
}
