import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"
import { TestServer, TestServerLive } from "./support/TestServer.js"

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(existsSync)

if (CHROMIUM === undefined) {
  console.warn("SKIPPED browser test: no Chromium at /usr/bin/chromium (install Debian's chromium to run it)")
}

layer(TestServerLive(), { excludeTestServices: true })("Swagger UI in headless Chromium", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)("executes GET /tools from the /ui page", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const browser = yield* Effect.acquireRelease(
        Effect.promise(() =>
          chromium.launch({
            executablePath: CHROMIUM!,
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
        ),
        (browser) => Effect.promise(() => browser.close())
      )
      const text = yield* Effect.promise(async () => {
        const page = await browser.newPage()
        const external: Array<string> = []
        page.on("request", (request) => {
          if (!request.url().startsWith(url) && !request.url().startsWith("data:")) external.push(request.url())
        })
        await page.goto(`${url}/ui`)
        const operation = page.locator(".opblock-get:has([data-path='/tools'])")
        await operation.locator(".opblock-summary").click()
        await operation.getByRole("button", { name: "Try it out" }).click()
        await operation.getByRole("button", { name: "Execute" }).click()
        const body = operation.locator(".responses-wrapper .live-responses-table .response-col_description pre").first()
        await body.waitFor({ timeout: 15_000 })
        return { body: await body.innerText(), external }
      })
      expect(text.external).toEqual([])
      expect(text.body).toContain("\"success\": true")
      expect(text.body).toContain("get_weather")
    }), 60_000)
})
