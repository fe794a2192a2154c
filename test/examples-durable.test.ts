import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/** The example app's durable workflows (issue #31): `onboarding` loops, retries, sleeps and polls; `batch` prices lines 16 at a time. */
const eventsOf = (url: string, workflowId: string, executionId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/${workflowId}/executions/${executionId}/events?limit=1000`),
    (page) =>
      page.body.data.events as Array<
        { type: string; from: string; path?: string; attempt?: number; wakeAt?: string; timestamp: string }
      >
  )

// Live clock: the engine's sleeps and back-offs wait real time.
layer(TestServerLive(), { excludeTestServices: true, timeout: 60_000 })("the example app's durable workflows", (it) => {
  it.effect("onboarding: each account welcomed (an item each), activation retried once, a durable sleep, three polls", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const accounts = [{ name: "Ada", email: "ada@example.com" }, { name: "Alan", email: "alan@example.com" }, {
        name: "Grace",
        email: "grace@example.com"
      }]
      const run = yield* fetchJson(
        `${url}/workflows/onboarding/execute`,
        json({
          input: { accounts, busyAttempts: 1, waitSeconds: 1 },
          options: { executionId: "onboarding-1" }
        })
      )
      expect(run.status).toBe(200)
      expect(run.body.data).toMatchObject({ status: "completed", result: { activated: 3, checks: 3, live: true } })
      expect(run.body.data.result.welcomed[1]).toBe("alan@example.com (key onboarding-1:welcome[1])")

      const events = yield* eventsOf(url, "onboarding", "onboarding-1")
      const items = events.filter((e) => e.type === "step-complete" && e.path?.startsWith("welcome["))
      expect(items.map((e) => e.path).sort()).toEqual(["welcome[0]", "welcome[1]", "welcome[2]"])
      const retries = events.filter((e) => e.type === "step-retry")
      expect(retries.map((e) => [e.from, e.attempt])).toEqual([["activate", 1]])
      const sleep = events.find((e) => e.type === "step-sleep")
      const afterSleep = events.find((e) => e.type === "step-start" && e.from === "start-polling")
      expect(sleep?.wakeAt).toBeDefined()
      expect(Date.parse(afterSleep!.timestamp)).toBeGreaterThanOrEqual(Date.parse(sleep!.wakeAt!))
      const polls = events.filter((e) => e.type === "step-complete" && e.path?.startsWith("poll["))
      expect(polls.map((e) => e.path)).toEqual(["poll[0]", "poll[1]", "poll[2]"])
    }))

  it.effect("onboarding: bad input is a 400 naming the field; batch prices every line", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const bad = yield* fetchJson(
        `${url}/workflows/onboarding/execute`,
        json({ input: { accounts: [], busyAttempts: 9, waitSeconds: 1 } })
      )
      expect(bad.status).toBe(400)
      expect(JSON.stringify(bad.body.error)).toMatch(/accounts|busyAttempts/)
      const batch = yield* fetchJson(`${url}/workflows/batch/execute`, json({ input: { count: 40 } }))
      expect(batch.body.data).toMatchObject({ status: "completed", result: { lines: 40, total: 3 * (40 * 41) / 2 } })
    }))
})
