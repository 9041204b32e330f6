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
import * as AST from "effect/SchemaAST"
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
  }, { identifier, description, [ColumnRead]: read })

/** The annotation holding a column schema's `read`, for the row decoders below. */
const ColumnRead: unique symbol = Symbol.for("@genway/gateway/Rows/ColumnRead")

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
 * leased, to `owner` until `now + leaseMs`; returns the leased rows as the database has them. A row
 * whose lease ran out counts as not leased, unless `due.unleasedOnly`: then only rows without a
 * lease are read (through a partial index on them), and the leases that ran out are dropped
 * first by `dropExpiredLeases`.
 */
export const claimDue = (
  sql: SqlClient.SqlClient,
  table: "tasks" | "responses",
  due: { readonly where: Statement.Fragment; readonly order: string; readonly unleasedOnly?: boolean },
  owner: string,
  now: number,
  leaseMs: number,
  limit: number
): Effect.Effect<ReadonlyArray<unknown>, SqlError> =>
  sql`UPDATE ${sql(table)} SET lease_owner = ${owner}, lease_until = ${now + leaseMs}, version = version + 1
    WHERE id IN (
      SELECT id FROM ${sql(table)}
      WHERE ${due.where} AND ${due.unleasedOnly === true ? sql`lease_owner IS NULL` : sql`(lease_until IS NULL OR lease_until < ${now})`}
      ORDER BY ${sql(due.order)} LIMIT ${limit}
      ${skipLocked(sql)}
    )
    RETURNING *`

/**
 * Drops up to `limit` leases of `table` that ran out before `now` (their worker died, or lost
 * track of them), the oldest first, so their rows are claimable again; a read of nothing when none
 * did, given an index on `lease_until` of the leased rows. On PostgreSQL rows another transaction
 * holds are skipped, not waited for.
 */
export const dropExpiredLeases = (sql: SqlClient.SqlClient, table: "tasks" | "responses", now: number, limit: number) =>
  sql`UPDATE ${sql(table)} SET lease_owner = NULL, lease_until = NULL, version = version + 1
    WHERE id IN (
      SELECT id FROM ${sql(table)} WHERE lease_owner IS NOT NULL AND lease_until < ${now}
      ORDER BY lease_until LIMIT ${limit}
      ${skipLocked(sql)}
    )`

/** A row that does not decode is a broken database, not a request's fault: a defect. */
export const orDieOnParse = <A, E, R>(effect: Effect.Effect<A, E | ParseError, R>): Effect.Effect<A, Exclude<E, ParseError>, R> =>
  Effect.catchIf(effect, (e): e is ParseError => (e as { _tag?: unknown })?._tag === "ParseError", (e) => Effect.die(e)) as Effect.Effect<
    A,
    Exclude<E, ParseError>,
    R
  >

/** Parses JSON text and checks it with `is`: the value, or `undefined` when it is not one. */
const jsonRead = <A>(u: unknown, is: (u: unknown) => u is A): A | undefined => {
  if (typeof u !== "string") return undefined
  let value: unknown
  try {
    value = JSON.parse(u)
  } catch {
    return undefined
  }
  return is(value) ? value : undefined
}

/**
 * A JSON text column (`TEXT` holding JSON) whose parsed value `is` accepts. Parsed once and checked
 * by `is`, where `Schema.parseJson(schema)` decoded the parsed value through the schema: each
 * claimed task has two such columns, and that decode was a good part of what reading a claimed row
 * allocated. For decoding only (rows are read, never encoded, by schema).
 */
export const JsonText = <A>(identifier: string, description: string, is: (u: unknown) => u is A): Schema.Schema<A, string> =>
  column<A, string>(identifier, description, (u) => jsonRead(u, is))

/** A nullable JSON text column (`undefined` from a driver counts as `NULL`). */
export const JsonTextOrNull = <A>(identifier: string, description: string, is: (u: unknown) => u is A): Schema.Schema<A | null, string | null> =>
  column<A | null, string | null>(identifier, description, (u) => (u === null || u === undefined ? null : jsonRead(u, is)))

/** What a field reader returns for a value that is not one of its column's. */
const invalid: unique symbol = Symbol.for("@genway/gateway/Rows/invalid")
type Read = (u: unknown) => unknown

/**
 * A reader for one field type: column schemas (numbers, nullable text, JSON text) read with their
 * own `read`; strings and literals are checked where they stand; any other type is decoded by its
 * own schema.
 */
const fieldReader = (ast: AST.AST): Read => {
  const read = ast.annotations[ColumnRead] as ((u: unknown) => unknown) | undefined
  if (read !== undefined) {
    return (u) => {
      const a = read(u)
      return a === undefined ? invalid : a
    }
  }
  if (AST.isStringKeyword(ast)) return (u) => (typeof u === "string" ? u : invalid)
  const literals: ReadonlyArray<AST.Literal> | undefined = AST.isLiteral(ast)
    ? [ast]
    : AST.isUnion(ast) && ast.types.every(AST.isLiteral)
    ? (ast.types as ReadonlyArray<AST.Literal>)
    : undefined
  if (literals !== undefined) {
    const allowed = new Set<unknown>(literals.map((l) => l.literal))
    return (u) => (allowed.has(u) ? u : invalid)
  }
  const decode = ParseResult.decodeUnknownEither(Schema.make(ast))
  return (u) => {
    const result = decode(u)
    return result._tag === "Right" ? result.right : invalid
  }
}

/**
 * A row reader compiled from a struct schema of plain fields (every row schema here): one object
 * built per row, each field read by `fieldReader`. It gives what `Schema.decodeUnknown` gives (the
 * declared fields; a field a driver leaves out is read as `undefined`, as the schema's decoder
 * does), or `invalid`, for which the caller runs the schema's own decoder to get its error. It
 * exists for what decoding costs: the schema's decoder makes an `Either` per field and an `Effect`
 * per row, a fifth of what the poll workers allocate (`pnpm bench polls`). `undefined` for a schema
 * of another shape (optional fields, index signatures, transformations of the whole row, parse
 * options of its own).
 */
const rowReader = <A>(ast: AST.AST): ((u: unknown) => A | typeof invalid) | undefined => {
  if (!AST.isTypeLiteral(ast) || ast.indexSignatures.length > 0) return undefined
  // Parse options of the schema's own (`exact`, `onExcessProperty`) are the schema decoder's to apply.
  if (ast.annotations[AST.ParseOptionsAnnotationId] !== undefined) return undefined
  const fields: Array<readonly [string, Read]> = []
  for (const property of ast.propertySignatures) {
    if (property.isOptional || typeof property.name !== "string") return undefined
    fields.push([property.name, fieldReader(property.type)])
  }
  return (u) => {
    if (typeof u !== "object" || u === null) return invalid
    const row: Record<string, unknown> = {}
    for (const [name, read] of fields) {
      const value = read((u as Record<string, unknown>)[name])
      if (value === invalid) return invalid
      row[name] = value
    }
    return row as A
  }
}

/**
 * How a table's rows are read: `all` decodes every row a statement returns with `Row`, `one` the
 * first, each then turned into the store's type by `to`. A row that does not decode is a defect,
 * with the schema's own error. The decoders are built once per row schema: building them per call
 * (as `SqlSchema.findAll` does) cost about 30 µs per statement, four times the decoding of a task
 * row itself; rows are read by `rowReader`, the schema's decoder running only for a row it refuses.
 */
export const decoder = <A, I, T>(Row: Schema.Schema<A, I>, to: (row: A) => T) => {
  const decodeAll = Schema.decodeUnknown(Schema.Array(Row))
  const decodeOne = Schema.decodeUnknown(Row)
  const read = rowReader<A>(Row.ast)
  return {
    all: <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<Array<T>, Exclude<E, ParseError>, R> =>
      statement.pipe(
        Effect.flatMap((rows) => {
          if (read !== undefined) {
            const out: Array<T> = new Array(rows.length)
            let i = 0
            for (; i < rows.length; i++) {
              const row = read(rows[i])
              if (row === invalid) break
              out[i] = to(row)
            }
            if (i === rows.length) return Effect.succeed(out)
          }
          return Effect.map(decodeAll(rows), (decoded) => decoded.map(to))
        }),
        orDieOnParse
      ),
    one: <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<Option.Option<T>, Exclude<E, ParseError>, R> =>
      statement.pipe(
        Effect.flatMap((rows) => {
          if (rows.length === 0) return Effect.succeed(Option.none<T>())
          const row = read === undefined ? invalid : read(rows[0])
          return row !== invalid ? Effect.succeed(Option.some(to(row))) : Effect.map(decodeOne(rows[0]), (decoded) => Option.some(to(decoded)))
        }),
        orDieOnParse
      )
  }
}
