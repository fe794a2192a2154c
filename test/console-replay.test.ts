import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { pipeline } from "../src/examples/workflows.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

if (CHROMIUM === undefined) {
  console.warn("SKIPPED console replay test: no Chromium at /usr/bin/chromium (install Debian's chromium to run them)")
}

const WAIT = { timeout: 30_000 }

/** `settle` fails while `broken`: a failed execution to restart once it is fixed. */
let broken = true
const flaky = workflow({
  id: "flaky",
  name: "Flaky",
  purpose: "fails until fixed",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "prepare", execute: () => ({ prepared: true }) })
  .andThen({
    id: "settle",
    execute: ({ data }) => {
      if (broken) throw new Error("settlement service down")
      return { ...data, settled: true }
    }
  })
const app = defineApp({ workflows: [pipeline, flaky] })

layer(TestServerLive({ app }), { excludeTestServices: true })(
  "Console: replay a finished execution (issue #33)",
  (it) => {
    it.scoped.skipIf(CHROMIUM === undefined)(
      "a step's \"Replay from here\" starts a replay from it and opens it, linked to the original",
      () =>
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
            const copied = await page.locator("[data-testid=execution-event][data-type=step-complete]").first()
              .innerText()
            const replay = decodeURIComponent(page.url().split("/").pop()!)
            return { original, replay, count, replayOf, copied, errors }
          })
          expect(outcome.count).toBe(7)
          expect(outcome.replay).not.toBe(outcome.original)
          expect(outcome.replayOf).toContain(outcome.original)
          expect(outcome.replayOf).toContain("measure")
          expect(outcome.copied).toContain("normalize")
          expect(outcome.errors).toEqual([])
          const record = yield* Effect.promise(() =>
            fetch(`${url}/workflows/executions/${outcome.original}`).then((r) => r.json())
          )
          expect(record.data.replays.map((r: any) => r.executionId)).toEqual([outcome.replay])
        }),
      120_000
    )

    it.scoped.skipIf(CHROMIUM === undefined)(
      "a failed execution's \"Restart from the failed step\" opens its restart, which completes",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const browser = yield* launchChromium
          const outcome = yield* Effect.promise(async () => {
            broken = true
            const failed = await fetch(`${url}/workflows/flaky/execute`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ input: {} })
            }).then((response) => response.json())
            broken = false
            const original: string = failed.executionId
            const page = await browser.newPage()
            await page.goto(`${url}/console#/workflows/flaky/executions/${original}`)
            await page.getByTestId("execution-status").getByText("error").waitFor(WAIT)
            await page.getByTestId("execution-restart").click()
            await page.waitForURL((address) => !address.hash.endsWith(encodeURIComponent(original)), WAIT)
            await page.getByTestId("execution-status").getByText("completed").waitFor(WAIT)
            const replayOf = await page.getByTestId("execution-replay-of").innerText()
            return { original, replayOf }
          })
          expect(outcome.replayOf).toContain(outcome.original)
          expect(outcome.replayOf).toContain("settle")
        }),
      120_000
    )
  }
)
