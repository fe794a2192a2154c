import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

if (CHROMIUM === undefined) {
  console.warn("SKIPPED browser test: no Chromium at /usr/bin/chromium (install Debian's chromium to run it)")
}

layer(TestServerLive(), { excludeTestServices: true })("Swagger UI in headless Chromium", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)("executes GET /tools from the /ui page", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const browser = yield* launchChromium
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

  it.scoped.skipIf(CHROMIUM === undefined)(
    "the first click on POST /agents/{id}/text and /tools/{name}/execute succeeds as pre-filled; no Authorize button",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const seen = yield* Effect.promise(async () => {
          const page = await browser.newPage()
          await page.goto(`${url}/ui`)
          const statuses: Array<string> = []
          for (const path of ["/agents/{id}/text", "/tools/{name}/execute"]) {
            const operation = page.locator(`.opblock-post:has([data-path='${path}'])`)
            await operation.locator(".opblock-summary").click()
            await operation.getByRole("button", { name: "Try it out" }).click()
            await operation.getByRole("button", { name: "Execute", exact: true }).click()
            const status = operation.locator(".live-responses-table .response .response-col_status").first()
            await status.waitFor({ timeout: 30_000 })
            statuses.push(`${path} ${await status.innerText()}`)
          }
          return { statuses, authorize: await page.locator(".btn.authorize").count() }
        })
        expect(seen).toEqual({ statuses: ["/agents/{id}/text 200", "/tools/{name}/execute 200"], authorize: 0 })
      }),
    90_000
  )
})
