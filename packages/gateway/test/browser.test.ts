/**
 * `/docs` and `/playground` in a real headless Chromium (playwright-core driving Debian's
 * `chromium`) against the real `genway serve` process with sandboxed vendors. Skipped, with a
 * message, where no Chromium is installed (`.ci/run` installs it). Waits are on conditions in the
 * page, bounded by deadlines; every request the pages make is recorded and must stay on the
 * gateway's origin.
 */
import { Registry } from "@genway/registry"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorOf } from "../src/docs/Page.js"
import { bin } from "./processes.js"
import { freePort, tempDir } from "./harness.js"

const chromiumPath = process.env["GENWAY_TEST_CHROMIUM"] ?? "/usr/bin/chromium"
const available = fs.existsSync(chromiumPath)
if (!available) console.warn(`browser tests skipped: no Chromium at ${chromiumPath} (apt-get install chromium, or set GENWAY_TEST_CHROMIUM)`)

const token = "browser-test-token"
const TIMEOUT = 90_000

/** The screenshots the README shows are refreshed when this is set to a folder. */
const screenshots = process.env["GENWAY_SCREENSHOTS"]

let child: ChildProcess | undefined
let context: BrowserContext | undefined
let base = ""
let profile = ""
const requests: Array<string> = []

const until = async (what: string, f: () => Promise<boolean>, timeoutMs: number) => {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (await f().catch(() => false)) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

const openPage = async (width = 1280, height = 900): Promise<Page> => {
  const page = await context!.newPage()
  await page.setViewportSize({ width, height })
  return page
}

/** The playground with the token saved and `model` chosen, its form built. */
const playground = async (model: string, width?: number): Promise<Page> => {
  const page = await openPage(width)
  await page.goto(`${base}/playground#${encodeURIComponent(model)}`)
  await page.getByLabel("API token").fill(token)
  await page.getByRole("button", { name: "Use token" }).click()
  await page.waitForFunction(`document.getElementById("model").value === ${JSON.stringify(model)} && document.querySelector("#fields .field") !== null`, undefined, { timeout: TIMEOUT })
  return page
}

describe.skipIf(!available)("docs and playground in Chromium", () => {
  beforeAll(async () => {
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    child = spawn(process.execPath, [bin, "serve"], {
      env: {
        ...process.env,
        GATEWAY_DATABASE_URL: "",
        GATEWAY_DATA_DIR: tempDir(),
        PORT: String(port),
        HOST: "127.0.0.1",
        GATEWAY_PUBLIC_URL: base,
        GATEWAY_API_KEYS: token,
        GATEWAY_SANDBOX_DELAY_MS: "1500",
        GATEWAY_POLL_INTERVAL_MS: "200"
      },
      stdio: ["ignore", "ignore", "pipe"]
    })
    await until("the gateway", () => fetch(`${base}/healthz`).then((r) => r.ok), TIMEOUT)
    const { chromium } = await import("playwright-core")
    profile = fs.mkdtempSync(path.join(os.tmpdir(), "genway-chromium-"))
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
    context.on("request", (request) => requests.push(request.url()))
  }, TIMEOUT * 2)

  afterAll(async () => {
    await context?.close()
    child?.kill("SIGTERM")
    if (profile !== "") fs.rmSync(profile, { recursive: true, force: true })
  })

  it("/docs renders every endpoint with its examples and status codes, grouped by vendor", async () => {
    const page = await openPage()
    await page.goto(`${base}/docs`)
    const seen = new Set<string>()
    for (const entry of Registry.entries) {
      if (seen.has(entry.path)) continue
      seen.add(entry.path)
      const section = page.locator(`#${anchorOf(entry.id)}`)
      await expect(section.count()).resolves.toBe(1)
      const text = await section.innerText()
      for (const id of entry.endpoints) expect(text).toContain(id)
      expect(text).toContain(entry.stage)
      expect(text).toContain(`curl -X POST "$GENWAY_URL${entry.path}"`)
      // Every field is in the table with its meaning.
      expect(await section.locator("td.desc").count()).toBeGreaterThan(0)
      for (const cell of await section.locator("td.desc").allInnerTexts()) expect(cell.trim().length).toBeGreaterThan(5)
      // Status codes (in collapsed details) of each route.
      const all = (await section.textContent()) ?? ""
      expect(all).toMatch(/401\s*Missing or unknown token/)
      expect(all).toMatch(/400\s*Invalid body or parameter/)
      if (entry.kind === "task") {
        expect(text).toContain("202 Accepted")
        expect(text).toContain("200, completed")
        expect(text).toContain("200, failed")
        expect(text).toContain(`${entry.path}/{task_id}`)
        expect(text).toContain(`"${entry.result}"`)
      } else {
        expect(text).toContain('200 with "stream": true')
      }
      // The TOC links to it.
      await expect(page.locator(`nav[aria-label="Models"] a[href="#${anchorOf(entry.id)}"]`).count()).resolves.toBe(1)
    }
    // E1's content parts in full.
    const e1 = await page.locator(`#${anchorOf("vendor-d/image-model-2.5-flash-image-preview")}`).innerText()
    expect(e1).toContain("messages[].content[] (text part).text")
    expect(e1).toContain("messages[].content[] (image_url part).image_url.url")
    // Field meanings from the registry.
    const e4 = await page.locator(`#${anchorOf("vendor-b/vid2.5-t2v-preview")}`).innerText()
    expect(e4).toMatch(/prompt_extend[\s\S]*rewrite and enrich the prompt/)
    expect(await page.locator("#other-routes + .table").innerText()).toContain("/v1/models")
    if (screenshots !== undefined) {
      await page.goto(`${base}/docs#contents`)
      await page.screenshot({ path: path.join(screenshots, "docs-desktop.png") })
      await page.setViewportSize({ width: 390, height: 844 })
      await page.goto(`${base}/docs#${anchorOf("vendor-b/vid2.5-t2v-preview")}`)
      await page.screenshot({ path: path.join(screenshots, "docs-phone.png") })
    }
    await page.close()
  }, TIMEOUT)

  it("the playground submits an E4 task, follows it and plays the video", async () => {
    const page = await playground("vendor-b/vid2.5-t2v-preview")
    await page.getByRole("button", { name: "Send" }).click()
    // HAVE_CURRENT_DATA or better: the browser decoded the video and can play it.
    await page.waitForFunction(`(() => { const v = document.querySelector("#media video"); return v !== null && v.readyState >= 2 && v.error === null })()`, undefined, { timeout: TIMEOUT })
    expect(await page.locator("#status").innerText()).toBe("completed")
    const duration = await page.evaluate(`document.querySelector("#media video").duration`)
    expect(duration).toBeGreaterThan(0)
    const src = await page.locator("#media video").getAttribute("src")
    expect(src?.startsWith(`${base}/media/`)).toBe(true)
    if (screenshots !== undefined) {
      await page.evaluate("window.scrollTo(0, 0)")
      await page.screenshot({ path: path.join(screenshots, "playground-desktop.png") })
    }
    await page.close()
  }, TIMEOUT)

  it("the playground follows the task's event stream where the gateway serves it, with progress", async () => {
    const page = await playground("vendor-b/vid2.5-t2v-preview")
    const streamed: Array<string> = []
    // The stream as DESIGN.md §8 shapes it; served here so the page's reader is tested on its own.
    await page.route("**/events", async (route) => {
      const taskUrl = route.request().url().replace(/\/events$/, "")
      streamed.push(route.request().headers()["authorization"] ?? "")
      const id = taskUrl.split("/").pop()
      const info = (status: string) => ({ id, status, created_at: "2025-01-01T00:00:00Z", updated_at: "2025-01-01T00:00:01Z" })
      const frame = (n: number, event: string, data: object) => `id: ${n}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`
      await route.fulfill({
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: frame(1, "task.pending", { task_info: info("pending"), model: "vendor-b/vid2.5-t2v-preview", url: taskUrl }) +
          ": keep-alive\n\n" +
          frame(2, "task.processing", { task_info: info("processing"), progress: { percent: 40, eta_seconds: 3, source: "vendor" }, url: taskUrl }) +
          frame(3, "task.completed", { task_info: info("completed"), videos: [], url: taskUrl })
      })
    })
    await page.evaluate(`window.etas = []; new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes) window.etas.push(n.textContent) }).observe(document.getElementById("eta"), { childList: true })`)
    const before = requests.length
    await page.getByRole("button", { name: "Send" }).click()
    await page.waitForFunction(`document.getElementById("status").textContent === "completed"`, undefined, { timeout: TIMEOUT })
    expect(streamed).toEqual([`Bearer ${token}`])
    expect(await page.locator("#via").innerText()).toContain("event stream")
    expect(await page.evaluate("window.etas")).toContain("about 3 s left")
    // Followed by the stream alone: the retrieve route was never polled.
    const created = requests.slice(before).filter((u) => /\/generation\/[0-9a-f-]{36}$/.test(u))
    expect(created).toEqual([])
    await page.close()
  }, TIMEOUT)

  it("a bound is checked by field before sending, and the server's 400 is shown by field", async () => {
    const page = await playground("vendor-b/vid2.5-t2v-preview")
    const before = requests.length
    await page.locator("#f-prompt").fill("x".repeat(2001))
    await page.locator("#f-seed").fill("-1")
    await page.getByRole("button", { name: "Send" }).click()
    await expect(page.locator("#f-prompt-error").innerText()).resolves.toContain("at most 2000 characters")
    await expect(page.locator("#f-seed-error").innerText()).resolves.toContain("between 0 and 2147483647")
    expect(await page.locator("#f-prompt").getAttribute("aria-invalid")).toBe("true")
    // Nothing was sent.
    expect(requests.slice(before).filter((u) => u.includes("/generation"))).toEqual([])
    await page.close()

    // A rule only the server knows (E8: image or image_tail), shown next to its field.
    const e8 = await playground("vendor-c/clip-v2.6/image-to-video", 390)
    await e8.locator("#f-image").fill("")
    await e8.getByRole("button", { name: "Send" }).click()
    await e8.waitForFunction(`document.getElementById("f-image-error").textContent !== ""`, undefined, { timeout: TIMEOUT })
    expect(await e8.locator("#f-image-error").innerText()).toContain("is required unless image_tail is given")
    expect(await e8.locator("#status").innerText()).toContain("400")
    if (screenshots !== undefined) await e8.screenshot({ path: path.join(screenshots, "playground-phone.png"), fullPage: true })
    await e8.close()
  }, TIMEOUT)

  it("E2 streams text as it arrives", async () => {
    const page = await playground("vendor-a/responses")
    await page.locator("#f-stream").selectOption("true")
    await page.evaluate(`window.changes = 0; new MutationObserver((records) => { window.changes += records.length }).observe(document.getElementById("text"), { childList: true, characterData: true, subtree: true })`)
    await page.getByRole("button", { name: "Send" }).click()
    await page.waitForFunction(`document.getElementById("status").textContent === "completed"`, undefined, { timeout: TIMEOUT })
    expect((await page.locator("#text").innerText()).length).toBeGreaterThan(0)
    // Several deltas, each appended as it came.
    expect(await page.evaluate("window.changes")).toBeGreaterThan(1)
    // In the background: answered at once, then followed on the retrieve route until done.
    await page.locator("#f-stream").selectOption("")
    await page.locator("#f-background").selectOption("true")
    await page.locator("#f-store").selectOption("true")
    await page.evaluate(`document.getElementById("status").textContent = ""; document.getElementById("text").textContent = ""`)
    await page.getByRole("button", { name: "Send" }).click()
    await page.waitForFunction(`document.getElementById("status").textContent === "completed" && document.getElementById("text").textContent !== ""`, undefined, { timeout: TIMEOUT })
    await page.close()
  }, TIMEOUT)

  it("E1 shows the generated image", async () => {
    const page = await playground("vendor-d/image-model-2.5-flash-image-preview")
    await page.getByRole("button", { name: "Send" }).click()
    await page.waitForFunction(`(() => { const img = document.querySelector("#media img.result"); return img !== null && img.complete && img.naturalWidth > 0 })()`, undefined, { timeout: TIMEOUT })
    expect(await page.locator("#status").innerText()).toBe("completed")
    await page.close()
  }, TIMEOUT)

  it("/docs and /playground carry their own icon: the browser asks for no /favicon.ico (a 404 in its console)", async () => {
    for (const route of ["/docs", "/playground"]) {
      const page = await openPage()
      const errors: Array<string> = []
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text())
      })
      await page.goto(`${base}${route}`, { waitUntil: "networkidle" })
      expect(await page.locator('link[rel="icon"]').count()).toBe(1)
      expect(errors).toEqual([])
      await page.close()
    }
  }, TIMEOUT)

  it("the pages make no request off the gateway's origin", () => {
    expect(requests.length).toBeGreaterThan(10)
    const off = requests.filter((u) => !u.startsWith(`${base}/`) && !u.startsWith("data:") && !u.startsWith("blob:"))
    expect(off).toEqual([])
  })
})
