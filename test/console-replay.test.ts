import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

if (CHROMIUM === undefined) {
  console.warn("SKIPPED console replay test: no Chromium at /usr/bin/chromium (install Debian's chromium to run them)")
}

const WAIT = { timeout: 30_000 }

layer(TestServerLive(), { excludeTestServices: true })("Console: replay a finished execution (issue #33)", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)("a step's \"Replay from here\" starts a replay from it and opens it, linked to the original", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const browser = yield* launchChromium
      const outcome = yield* Effect.promise(async () => {
        const started = await fetch(`${url}/workflows/pipeline/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input: { text: " replay me ", n: 21 } })
        }).then((response) => response.json())
        const original: string = started.data.executionId
        const page = await browser.newPage()
        const errors: Array<string> = []
        page.on("pageerror", (error) => errors.push(error.message))
        await page.goto(`${url}/console#/workflows/pipeline/executions/${original}`)
        await page.getByTestId("execution-status").getByText("completed").waitFor(WAIT)
        const buttons = page.getByTestId("replay-from")
        await buttons.first().waitFor(WAIT)
        // One per top-level step (its step-start), none on inner steps' events.
        const count = await buttons.count()
        // The second step's button (measure): normalize's output is copied.
        await page.locator("[data-testid=execution-event][data-type=step-start]", { hasText: "measure" })
          .getByTestId("replay-from").click()
        await page.waitForURL((address) => !address.hash.endsWith(encodeURIComponent(original)), WAIT)
        await page.getByTestId("execution-status").getByText("completed").waitFor(WAIT)
        const replayOf = await page.getByTestId("execution-replay-of").innerText()
        const copied = await page.locator("[data-testid=execution-event][data-type=step-complete]").first().innerText()
        const replay = decodeURIComponent(page.url().split("/").pop()!)
        return { original, replay, count, replayOf, copied, errors }
      })
      expect(outcome.count).toBe(7)
      expect(outcome.replay).not.toBe(outcome.original)
      expect(outcome.replayOf).toContain(outcome.original)
      expect(outcome.replayOf).toContain("measure")
      expect(outcome.copied).toContain("normalize")
      expect(outcome.errors).toEqual([])
      const record = yield* Effect.promise(() => fetch(`${url}/workflows/executions/${outcome.original}`).then((r) => r.json()))
      expect(record.data.replays.map((r: any) => r.executionId)).toEqual([outcome.replay])
    }), 120_000)
})
