/**
 * `/docs` rendering without a browser: routes other features add to the OpenAPI document appear
 * (under their model, or under "Other routes"), and the page references nothing off its origin.
 */
import { Api, Registry } from "@genway/registry"
import { describe, expect, it } from "vitest"
import * as Page from "../src/docs/Page.js"
import * as Playground from "../src/docs/Playground.js"

const e4 = Registry.entries.find((e) => e.endpoints.includes("E4"))!

const withExtraRoutes = () => {
  const doc = structuredClone(Api.openApiSpec(Registry.entries)) as any
  doc.paths["/v1/webhooks"] = {
    post: { summary: "Register a webhook endpoint", responses: { "201": { description: "Created" }, "400": { description: "Bad" } } }
  }
  doc.paths[`${e4.path}/{task_id}/events`] = {
    get: { summary: "The task's event stream", responses: { "200": { description: "text/event-stream" } } }
  }
  return doc
}

describe("/docs", () => {
  it("shows routes other features add to the OpenAPI document", () => {
    const html = Page.render(Registry.entries, withExtraRoutes())
    const other = html.slice(html.indexOf('id="other-routes"'))
    expect(other).toContain("/v1/webhooks")
    expect(other).toContain("Register a webhook endpoint")
    expect(other).toContain("/v1/models")
    const section = html.slice(html.indexOf(`id="${Page.anchorOf(e4.id)}"`), html.indexOf("</section>", html.indexOf(`id="${Page.anchorOf(e4.id)}"`)))
    expect(section).toContain(`${e4.path}/{task_id}/events`)
    expect(section).toContain("The task&#39;s event stream")
    // Listed once: not also under "Other routes".
    expect(other).not.toContain(`${e4.path}/{task_id}/events`)
  })

  it("documents each shared path once and every entry's id and stage in the table of contents", () => {
    const html = Page.render(Registry.entries, Api.openApiSpec(Registry.entries))
    const toc = html.slice(html.indexOf('aria-label="Models"'), html.indexOf("</nav>", html.indexOf('aria-label="Models"')))
    for (const entry of Registry.entries) {
      for (const id of entry.endpoints) expect(toc).toContain(`>${id}<`)
    }
    expect(html.match(/<section class="endpoint"/g)?.length).toBe(new Set(Registry.entries.map((e) => e.path)).size)
  })

  it("neither page loads anything from elsewhere", () => {
    const pages = [Page.render(Registry.entries, Api.openApiSpec(Registry.entries)), Playground.html]
    for (const html of pages) {
      expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)="(https?:)?\/\//i)
      expect(html).not.toMatch(/@import|url\((["']?)https?:/i)
    }
  })
})
