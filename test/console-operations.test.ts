import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defineApp } from "../src/App.js"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { pair, release, single } from "./support/concurrency.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/timers.js"
import { echo, makeReceiver, webhookTestConfig } from "./support/webhooks.js"

if (CHROMIUM === undefined) {
  console.warn(
    "SKIPPED console operations test: no Chromium at /usr/bin/chromium (install Debian's chromium to run them)"
  )
}

// Issue #33 item 5: the console shows queued executions (a filter and a badge in the list, the wait in
// the execution's view) and an execution's webhook deliveries, from the real service in real Chromium.

const WAIT = { timeout: 30_000 }
const app = defineApp({ workflows: [pair, single, echo] })

layer(TestServerLive({ app, config: webhookTestConfig() }), { excludeTestServices: true })(
  "Console: queued executions and webhook deliveries",
  (it) => {
    it.scoped.skipIf(CHROMIUM === undefined)(
      "a queued execution is listed under its filter with its badge, and its view says it waits for a slot",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          // `single` runs one at a time: the first holds its latch, the second waits queued.
          const first = yield* fetchJson(`${url}/workflows/single/run`, json({ input: { latch: "console-queued" } }))
          const second = yield* fetchJson(`${url}/workflows/single/run`, json({ input: { latch: "console-queued" } }))
          expect(second.body.data).toMatchObject({ status: "running", waiting: "concurrency" })
          const browser = yield* launchChromium
          const outcome = yield* Effect.promise(async () => {
            const page = await browser.newPage()
            const errors: Array<string> = []
            page.on("pageerror", (error) => errors.push(error.message))
            await page.goto(`${url}/console#/workflows/single`)
            await page.getByLabel("Status").selectOption("queued")
            await page.getByTestId("execution-queued").first().waitFor(WAIT)
            const listed = await page.getByTestId("execution-row").allInnerTexts()
            await page.getByTestId("execution-row").first().click()
            await page.getByTestId("execution-waiting").waitFor(WAIT)
            const waiting = await page.getByTestId("execution-waiting").innerText()
            return { listed, waiting, errors }
          })
          // Only the queued one, not the one holding the slot.
          expect(outcome.listed).toHaveLength(1)
          expect(outcome.listed[0]).toContain(second.body.data.executionId)
          expect(outcome.listed[0]).toContain("queued since")
          expect(outcome.waiting).toContain("queued for a concurrency slot since")
          expect(outcome.errors).toEqual([])
          yield* release("console-queued")
          yield* eventually(
            Effect.map(
              fetchJson(`${url}/workflows/single/executions/${second.body.data.executionId}/state`),
              (r) => r.body.data.status
            ),
            (status) => status === "completed",
            "the queued execution completed"
          )
          expect(first.status).toBe(201)
        })
    )

    it.scoped.skipIf(CHROMIUM === undefined)(
      "an execution's webhook deliveries: a failed attempt, then delivered",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const receiver = yield* makeReceiver([500])
          expect((yield* fetchJson(`${url}/webhooks/secret`, json({}))).status).toBe(201)
          const started = yield* fetchJson(
            `${url}/workflows/echo/execute`,
            json({
              input: { text: "call me back" },
              options: { webhook: { url: `https://127.0.0.1:${receiver.port}/hook` } }
            })
          )
          expect(started.body.data.status).toBe("completed")
          const executionId: string = started.body.data.executionId
          yield* eventually(Effect.sync(() => receiver.received.length), (n) =>
            n >= 2, "two attempts (a 500, then a 200)")
          const browser = yield* launchChromium
          const outcome = yield* Effect.promise(async () => {
            const page = await browser.newPage()
            const errors: Array<string> = []
            page.on("pageerror", (error) =>
              errors.push(error.message))
            await page.goto(`${url}/console#/workflows/echo/executions/${executionId}`)
            await page.locator("[data-testid=webhook-delivery][data-status=delivered]").waitFor(WAIT)
            const row = await page.getByTestId("webhook-delivery").innerText()
            return { row, errors }
          })
          expect(outcome.row).toContain("execution.completed")
          expect(outcome.row).toContain(`https://127.0.0.1:${receiver.port}/hook`)
          expect(outcome.row).toContain("delivered")
          expect(outcome.row).toMatch(/\b2\b/)
          expect(outcome.errors).toEqual([])
        })
    )
  }
)
