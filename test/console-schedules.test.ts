import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { CODE_ID, schedulesApp, testScheduleConfig } from "./support/schedules.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * The console's Schedules section (issue #33, item 5; issue #42, item 2): the list, page by page, with each
 * schedule's next fire time; one schedule's input and next fire times fetched from its own route; pause and
 * resume (needs `npm run build`).
 */

const WAIT = { timeout: 30_000 }
/** More API schedules than a console page (20) holds, listed before the code schedule (by workflow id). */
const MADE = 25

layer(TestServerLive({ app: schedulesApp, config: testScheduleConfig }), { excludeTestServices: true })(
  "Console schedules",
  (it) => {
    it.scoped.skipIf(CHROMIUM === undefined)(
      "pages the schedules with their next fire time, shows one's input and next times, pauses and resumes one",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          for (let i = 0; i < MADE; i++) {
            const made = yield* fetchJson(
              `${url}/workflows/plain/schedules`,
              json({ name: `yearly-${String(i).padStart(2, "0")}`, cron: "0 0 1 1 *", input: { n: i } })
            )
            expect(made.status).toBe(201)
          }
          const browser = yield* launchChromium
          const state = () =>
            Effect.map(fetchJson(`${url}/workflows/tick/schedules/${CODE_ID}`), (r) => r.body.data.paused as boolean)
          const seen = yield* Effect.promise(async () => {
            const page = await browser.newPage()
            const errors: Array<string> = []
            page.on("pageerror", (error) => errors.push(error.message))
            await page.goto(`${url}/console`)
            await page.getByTestId("nav-schedules").click()
            await page.getByTestId("schedule-row").filter({ hasText: "yearly-00" }).waitFor(WAIT)
            const firstPage = await page.getByTestId("schedule-row").count()
            await page.getByRole("navigation", { name: "Schedule pages" }).getByRole("button", { name: "Next" }).click()
            const row = page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" })
            await row.waitFor(WAIT)
            const secondPage = await page.getByTestId("schedule-row").count()
            const text = await row.textContent()
            const next = await row.getByTestId("schedule-next").textContent()
            await row.getByTestId("schedule-show").click()
            const details = page.getByTestId("schedule-details")
            await details.getByText("Input").waitFor(WAIT)
            const times = await details.getByTestId("schedule-times").textContent()
            const input = await details.locator("pre").textContent()
            await row.getByTestId("schedule-toggle").click()
            await row.getByRole("button", { name: "Resume" }).waitFor(WAIT)
            const pausedText = await row.textContent()
            return { firstPage, secondPage, text, next, times, input, pausedText, errors, page }
          })
          expect(seen.firstPage).toBe(20)
          expect(seen.secondPage).toBe(MADE + 1 - 20)
          expect(seen.text).toContain("* * * * * *")
          // The list's one next fire time, as the browser's locale writes it (with its year).
          expect(seen.next?.match(/\b\d{4}\b/g)).toHaveLength(1)
          // The schedule's own route: its next five times and its input.
          expect(seen.times?.match(/\b\d{4}\b/g)).toHaveLength(5)
          expect(JSON.parse(seen.input ?? "null")).toEqual({ n: 1 })
          expect(seen.pausedText).toContain("paused")
          expect(yield* state()).toBe(true)
          yield* Effect.promise(async () => {
            await seen.page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" }).getByRole("button", {
              name: "Resume"
            }).click()
            await seen.page.getByTestId("schedule-row").filter({ hasText: "every-second (code)" }).getByRole("button", {
              name: "Pause"
            }).waitFor(WAIT)
          })
          expect(yield* state()).toBe(false)
          expect(seen.errors).toEqual([])
        }),
      120_000
    )
  }
)
