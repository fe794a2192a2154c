import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { sqlOfServer } from "./support/schedules.js"
import { fetchJson, TestServer, TestServerLive, type TestServerOptions } from "./support/TestServer.js"

/**
 * Issue #42, item 2: schedule lists are summaries, paged like the execution listing. Three users with
 * 100 schedules each, every input at the per-schedule cap (`schedules.maxInputBytes`, 64 KiB), listed by
 * an admin: a page is bounded in bytes whatever the inputs, paging walks all 300 exactly once, and the
 * whole input comes only from the one schedule's route. On SQLite and Postgres.
 */

const CAP = 64 * 1024
/** `{"text":"…"}` at exactly CAP bytes of JSON. */
const textAtCap = "x".repeat(CAP - JSON.stringify({ text: "" }).length)

const blob = workflow({
  id: "blob",
  name: "Blob",
  purpose: "Takes a large input",
  input: Schema.Struct({ text: Schema.String }),
  result: Schema.Struct({ length: Schema.Number })
}).andThen({ id: "measure", execute: ({ data }) => ({ length: data.text.length }) })

const app = defineApp({ workflows: [blob] })

const SECRET = "a-long-shared-secret-for-schedule-list-tests"
const sign = (claims: Record<string, unknown>) =>
  Effect.promise(() =>
    new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
      new TextEncoder().encode(SECRET)
    )
  )
const options: TestServerOptions = {
  app,
  config: {
    auth: {
      production: false,
      jwt: {
        secret: Redacted.make(SECRET),
        defaultPrivate: false,
        publicRoutes: [],
        admin: { claim: "roles", value: "admin" }
      }
    }
  }
}

/** The response's status, its body's size in bytes and its parsed body. */
const get = (url: string, token: string) =>
  Effect.promise(async () => {
    const started = performance.now()
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    const text = await response.text()
    return {
      status: response.status,
      bytes: Buffer.byteLength(text),
      ms: performance.now() - started,
      body: JSON.parse(text)
    }
  })

const post = (url: string, token: string, body: unknown) =>
  fetchJson(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body)
  })

const USERS = ["ann", "ben", "cat"]
const PER_USER = 100
const PAGE = 50

const backends = [
  { name: "SQLite", skip: false, layer: TestServerLive(options) },
  { name: "Postgres", skip: !postgresAvailable, layer: PostgresTestServerLive(options) }
] as const

for (const backend of backends) {
  describe.skipIf(backend.skip)(`schedule lists on ${backend.name}`, () => {
    layer(backend.layer, { excludeTestServices: true })("3 users x 100 schedules", (it) => {
      it.effect(
        "with inputs at the cap, an admin's list is a bounded page of summaries, and paging walks all 300 exactly once",
        () =>
          Effect.gen(function*() {
            const { url } = yield* TestServer
            const admin = yield* sign({ sub: "root", roles: ["admin"] })
            const base = `${url}/workflows/blob/schedules`
            const created = new Set<string>()
            for (const user of USERS) {
              const token = yield* sign({ sub: user })
              const answers = yield* Effect.forEach(
                Array.from({ length: PER_USER }, (_, i) => i),
                (i) =>
                  post(base, token, {
                    name: `${user}-${i}`,
                    cron: "0 0 1 1 *",
                    timezone: "Europe/Berlin",
                    input: { text: textAtCap }
                  }),
                { concurrency: 4 }
              )
              for (const answer of answers) {
                expect(answer.status).toBe(201)
                created.add(answer.body.data.id)
              }
            }
            expect(created.size).toBe(USERS.length * PER_USER)
            // One byte over the cap is refused, naming the setting (a per-write cap: no per-owner quota).
            const over = yield* post(base, admin, { name: "over", cron: "0 0 1 1 *", input: { text: `${textAtCap}x` } })
            expect(over.status).toBe(400)
            expect(over.body.error).toBe(
              "Schedule input is 64 KiB as JSON, over the 64 KiB a schedule may store (schedules.maxInputBytes, SCHEDULE_INPUT_MAX_BYTES)"
            )

            // The default page: 50 summaries, a few hundred bytes each.
            const first = yield* get(`${url}/schedules`, admin)
            expect(first.status).toBe(200)
            expect(first.body.data).toHaveLength(PAGE)
            expect(first.bytes).toBeLessThan(64 * 1024)
            const row = first.body.data[0]
            expect(row).not.toHaveProperty("input")
            expect(row).not.toHaveProperty("nextFireTimes")
            expect(row).toMatchObject({
              workflowId: "blob",
              cron: "0 0 1 1 *",
              timezone: "Europe/Berlin",
              paused: false,
              nextFireAt: expect.any(String)
            })

            // The largest page holds all 300 and is still bounded (the inputs alone would be 300 x 64 KiB).
            const rss = process.memoryUsage().rss
            const whole = yield* get(`${url}/schedules?limit=500`, admin)
            expect(whole.body.data).toHaveLength(created.size)
            expect(whole.bytes).toBeLessThan(256 * 1024)
            console.log(
              `[figures] ${backend.name}: admin GET /schedules?limit=500 over 3x100 schedules: ${whole.bytes} bytes, ${
                whole.ms.toFixed(0)
              } ms; default page ${first.bytes} bytes, ${first.ms.toFixed(0)} ms; ` +
                `RSS ${(rss / 1e6).toFixed(0)} -> ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`
            )

            // Paging (limit, offset) walks every schedule exactly once, on both lists.
            for (const list of [`${url}/schedules`, base]) {
              const seen: Array<string> = []
              for (let offset = 0;; offset += PAGE) {
                const page = yield* get(`${list}?limit=${PAGE}&offset=${offset}`, admin)
                expect(page.status).toBe(200)
                seen.push(...page.body.data.map((s: { id: string }) => s.id))
                if (page.body.data.length < PAGE) break
              }
              expect(seen).toHaveLength(created.size)
              expect(new Set(seen)).toEqual(created)
            }

            // A failed firing's message can quote a refused input: a list shows its first 1,000 characters.
            const failing = [...created][0]
            const sql = yield* sqlOfServer
            yield* sql`UPDATE workflow_schedules SET failures = 1, last_error = ${`input at t: ${
              "y".repeat(CAP)
            }`} WHERE id = ${failing}`
            const listedError = (yield* get(`${url}/schedules?limit=500`, admin)).body.data.find((s: { id: string }) =>
              s.id === failing
            ).lastError
            expect(listedError).toHaveLength(1001)
            expect(listedError.endsWith("…")).toBe(true)
            expect((yield* get(`${base}/${failing}`, admin)).body.data.lastError).toHaveLength(CAP + 12)

            // A user pages through their own only; the whole input comes from the one schedule's route.
            const ann = yield* sign({ sub: "ann" })
            const own = yield* get(`${url}/schedules?limit=500`, ann)
            expect(own.body.data).toHaveLength(PER_USER)
            expect(own.body.data.every((s: { name: string }) => s.name.startsWith("ann-"))).toBe(true)
            const one = yield* get(`${base}/${own.body.data[0].id}`, ann)
            expect(one.status).toBe(200)
            expect(one.body.data.input).toEqual({ text: textAtCap })
            expect(one.body.data.nextFireTimes).toHaveLength(5)
            expect((yield* get(`${base}/${own.body.data[0].id}`, yield* sign({ sub: "ben" }))).status).toBe(404)
          }),
        240_000
      )
    })
  })
}

describe("schedules.maxInputBytes", () => {
  it("is 64 KiB by default; the config file sets it, SCHEDULE_INPUT_MAX_BYTES wins; outside 1 to 1 MiB fails start-up", () => {
    expect(resolveServerConfig({}, {}).schedules).toEqual({ minIntervalMs: 60_000, maxInputBytes: CAP })
    expect(resolveServerConfig({ schedules: { maxInputBytes: 1000 } }, {}).schedules?.maxInputBytes).toBe(1000)
    expect(
      resolveServerConfig({ schedules: { maxInputBytes: 1000 } }, { SCHEDULE_INPUT_MAX_BYTES: "2048" }).schedules
        ?.maxInputBytes
    ).toBe(2048)
    expect(() => resolveServerConfig({}, { SCHEDULE_INPUT_MAX_BYTES: "2MB" })).toThrow(
      /SCHEDULE_INPUT_MAX_BYTES: must be an integer from 1 to 1048576/
    )
    expect(() => resolveServerConfig({}, { SCHEDULE_INPUT_MAX_BYTES: "1048577" })).toThrow(/SCHEDULE_INPUT_MAX_BYTES/)
  })
})
