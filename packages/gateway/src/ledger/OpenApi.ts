/** `/v1/usage` and `/admin/usage` in `/openapi.json` (DESIGN.md §10). */
const units = {
  type: "object",
  properties: {
    seconds: { type: "number" },
    images: { type: "integer" },
    input_tokens: { type: "integer" },
    output_tokens: { type: "integer" }
  }
}
const totals = {
  type: "object",
  properties: {
    units,
    cost_usd: { type: "number", description: "settled cost" },
    reserved_usd: { type: "number", description: "open reservations of tasks not finished yet" },
    counts: {
      type: "object",
      properties: {
        completed: { type: "integer" },
        failed: { type: "integer" },
        canceled: { type: "integer" },
        requests: { type: "integer", description: "E1/E2 requests" }
      }
    }
  }
}
const report = {
  type: "object",
  properties: {
    from: { type: "string", format: "date-time" },
    to: { type: "string", format: "date-time" },
    currency: { type: "string", enum: ["USD"] },
    total: totals,
    groups: {
      type: "array",
      items: { allOf: [totals, { type: "object", properties: { key: { type: "string", description: "entry id, key id, YYYY-MM-DD or tenant" } } }] }
    }
  }
}
const query = (name: string, description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  name,
  in: "query",
  required: false,
  description,
  schema
})
const window = [
  query("from", "ISO 8601 date or time (UTC); default the start of the current month"),
  query("to", "ISO 8601 date (inclusive) or time (exclusive); default the end of the current month")
]
const ok = { "200": { description: "the usage report", content: { "application/json": { schema: report } } } }

const paths = {
  "/v1/usage": {
    get: {
      tags: ["usage"],
      summary: "Usage and cost of the caller's tenant",
      parameters: [...window, query("group_by", "one group per model, key or day", { type: "string", enum: ["model", "key", "day"] })],
      responses: ok
    }
  },
  "/admin/usage": {
    get: {
      tags: ["admin"],
      summary: "Usage and cost of every tenant (or one)",
      security: [{ adminToken: [] }],
      parameters: [
        ...window,
        query("group_by", "one group per model, key, day or tenant", { type: "string", enum: ["model", "key", "day", "tenant"] }),
        query("tenant", "one tenant only")
      ],
      responses: ok
    }
  }
}

/** Adds the usage routes to an OpenAPI document. */
export const withUsage = <D extends object>(doc: D): D => {
  const d = doc as any
  return {
    ...d,
    tags: [...(d.tags ?? []), { name: "usage", description: "Usage and cost from the usage ledger" }],
    paths: { ...d.paths, ...paths }
  }
}
