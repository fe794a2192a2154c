import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { CODE_ID, schedulesApp, testScheduleConfig } from "./support/schedules.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/** The console's Schedules section (issue #33, item 5): the list with next fire times, pause and resume (needs `npm run build`). */

const WAIT = { timeout: 30_000 }

layer(TestServerLive({ app: schedulesApp, config: testScheduleConfig }), { excludeTestServices: true })("Console schedules", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)("lists the schedules with their next fire times, pauses and resumes one", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const browser = yield* launchChromium
      const state = () => Effect.map(fetchJson(`${url}/workflows/tick/schedules/${CODE_ID}`), (r) => r.body.data.paused as boolean)
      const seen = yield* Effect.promise(async () => {
        const page = await browser.newPage()
        const errors: Array<string> = []
        page.on("pageerror", (error) => errors.push(error.message))
        await page.goto(`${url}/console`)
        await page.getByTestId("nav-schedules").click()
        const row = page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" })
        await row.waitFor(WAIT)
        const text = await row.textContent()
        const next = await row.getByTestId("schedule-next").textContent()
        await row.getByTestId("schedule-toggle").click()
        await row.getByRole("button", { name: "Resume" }).waitFor(WAIT)
        const pausedText = await row.textContent()
        return { text, next, pausedText, errors, page }
      })
      expect(seen.text).toContain("* * * * * *")
      // Three next fire times, as the browser's locale writes them (each with its year).
      expect(seen.next?.match(/\b\d{4}\b/g)).toHaveLength(3)
      expect(seen.pausedText).toContain("paused")
      expect(yield* state()).toBe(true)
      yield* Effect.promise(async () => {
        await seen.page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" }).getByRole("button", { name: "Resume" }).click()
        await seen.page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" }).getByRole("button", { name: "Pause" }).waitFor(WAIT)
      })
      expect(yield* state()).toBe(false)
      expect(seen.errors).toEqual([])
    }), 120_000)
})
