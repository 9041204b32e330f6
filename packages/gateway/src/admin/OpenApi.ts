/**
 * The admin routes in the OpenAPI document, under their own `admin` tag, merged into the
 * registry's document by `http/Docs.ts`.
 */

const tag = "admin"

const error = { $ref: "#/components/schemas/GenwayAdminError" }
const key = { $ref: "#/components/schemas/GenwayApiKey" }

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: "null" }] })

const fields = {
  name: { ...nullable({ type: "string", maxLength: 200 }), description: "a label" },
  models: {
    ...nullable({ type: "array", minItems: 1, maxItems: 200, items: { type: "string", maxLength: 200 } }),
    description: "entry ids as /v1/models lists them, `*` wildcards (e.g. vendor-b/*); null: every model"
  },
  rpm: { ...nullable({ type: "integer", minimum: 1, maximum: 1_000_000 }), description: "requests per minute over every route; null: unlimited" },
  max_in_flight: {
    ...nullable({ type: "integer", minimum: 1, maximum: 1_000_000 }),
    description: "tasks created with the key that may be pending or processing at once; null: unlimited"
  },
  expires_at: { ...nullable({ type: "string", format: "date-time" }), description: "ISO 8601; must be in the future" },
  budget_usd: { ...nullable({ type: "number", minimum: 0 }), description: "spending limit in USD per budget_period; a create that would pass it is refused (402)" },
  budget_period: { ...nullable({ type: "string", enum: ["day", "month", "total"] }) }
}

const responses = (ok: Record<string, unknown>) => ({
  ...ok,
  "400": { description: "a field is invalid; `param` names it", content: { "application/json": { schema: error } } },
  "401": { description: "the admin token is missing or wrong", content: { "application/json": { schema: error } } },
  "404": { description: "unknown key, or the admin API is not enabled (GATEWAY_ADMIN_TOKEN unset)", content: { "application/json": { schema: error } } }
})

const json = (schema: unknown, description: string) => ({ description, content: { "application/json": { schema } } })
const body = (schema: unknown, required = true) => ({ required, content: { "application/json": { schema } } })
const idParam = { name: "id", in: "path", required: true, schema: { type: "string" } }
const tenantParam = { name: "tenant", in: "path", required: true, schema: { type: "string" } }
const security = [{ adminToken: [] }]

const paths = {
  "/admin/keys": {
    post: {
      tags: [tag],
      summary: "Create a key (its token is in this answer only)",
      security,
      requestBody: body({
        type: "object",
        additionalProperties: false,
        properties: { tenant: { type: "string", description: "default: a new tenant" }, ...fields }
      }, false),
      responses: responses({ "201": json({ allOf: [key, { type: "object", properties: { token: { type: "string" } } }] }, "the key and its token") })
    },
    get: {
      tags: [tag],
      summary: "List keys, newest first (never their tokens)",
      security,
      parameters: [{ name: "tenant", in: "query", required: false, schema: { type: "string" } }],
      responses: responses({ "200": json({ type: "object", properties: { data: { type: "array", items: key } } }, "the keys") })
    }
  },
  "/admin/keys/{id}": {
    get: { tags: [tag], summary: "One key", security, parameters: [idParam], responses: responses({ "200": json(key, "the key") }) },
    patch: {
      tags: [tag],
      summary: "Change a key's fields (null clears one)",
      security,
      parameters: [idParam],
      requestBody: body({ type: "object", additionalProperties: false, properties: fields }),
      responses: responses({ "200": json(key, "the key") })
    },
    delete: {
      tags: [tag],
      summary: "Revoke a key (refused on every replica within 5 s)",
      security,
      parameters: [idParam],
      responses: responses({ "204": { description: "revoked" } })
    }
  },
  "/admin/keys/{id}/rotate": {
    post: {
      tags: [tag],
      summary: "Give a key a new token; the old one works until the grace ends",
      security,
      parameters: [idParam],
      requestBody: body({ type: "object", properties: { grace_seconds: { type: "integer", minimum: 0, maximum: 2_592_000, default: 0 } } }, false),
      responses: responses({
        "200": json({
          type: "object",
          properties: { id: { type: "string" }, token: { type: "string" }, previous_token_expires_at: { type: "string", format: "date-time" } }
        }, "the new token")
      })
    }
  },
  "/admin/tenants/{tenant}/budget": {
    put: {
      tags: [tag],
      summary: "Set a tenant's budget (every key of the tenant together)",
      security,
      parameters: [tenantParam],
      requestBody: body({
        type: "object",
        required: ["budget_usd", "budget_period"],
        properties: { budget_usd: fields.budget_usd, budget_period: fields.budget_period }
      }),
      responses: responses({ "200": json({ type: "object", properties: { tenant: { type: "string" }, ...fields } }, "the budget") })
    },
    get: {
      tags: [tag],
      summary: "A tenant's budget",
      security,
      parameters: [tenantParam],
      responses: responses({ "200": json({ type: "object", properties: { tenant: { type: "string" }, ...fields } }, "the budget") })
    }
  }
}

const schemas = {
  GenwayApiKey: {
    type: "object",
    properties: {
      id: { type: "string" },
      object: { type: "string", enum: ["api_key"] },
      tenant: { type: "string" },
      prefix: { type: "string", description: "the first characters of the token" },
      ...fields,
      created_at: { type: "string", format: "date-time" },
      revoked_at: nullable({ type: "string", format: "date-time" }),
      previous_token_expires_at: nullable({ type: "string", format: "date-time" })
    }
  },
  GenwayAdminError: {
    type: "object",
    properties: {
      error: {
        type: "object",
        properties: { code: { type: "integer" }, title: { type: "string" }, detail: { type: "string" }, param: { type: "string" } }
      }
    }
  }
}

/** The document with the admin routes, tag, schemas and security scheme added. */
export const withAdmin = <D extends object>(doc: D): D => {
  const d = doc as any
  return {
    ...d,
    tags: [...(d.tags ?? []), { name: tag, description: "Keys and budgets for platform teams; enabled by GATEWAY_ADMIN_TOKEN" }],
    paths: { ...d.paths, ...paths },
    components: {
      ...d.components,
      schemas: { ...d.components?.schemas, ...schemas },
      securitySchemes: { ...d.components?.securitySchemes, adminToken: { type: "http", scheme: "bearer", description: "GATEWAY_ADMIN_TOKEN" } }
    }
  }
}
