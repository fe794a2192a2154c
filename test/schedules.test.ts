import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { CODE_ID, eventually, firedOf, schedulesApp, sqlOfServer, testScheduleConfig } from "./support/schedules.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Workflow schedules over HTTP (issue #33), on SQLite in process: a code schedule fires each second
 * (the test setting `schedules.minIntervalSeconds`), the CRUD routes, validation (400 naming the
 * field), pause and resume, failures recorded, and ownership under JWT.
 */

const call = (url: string, method: string, body?: unknown, token?: string) =>
  fetchJson(url, {
    method,
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

describe("workflow schedules", () => {
  layer(TestServerLive({ app: schedulesApp, config: testScheduleConfig }), { excludeTestServices: true })(
    "no authentication",
    (it) => {
      it.effect("a code schedule fires each second: one execution per fire time, completed, with the schedule in its context", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOfServer
          const fired = yield* eventually(
            firedOf(sql, CODE_ID),
            (rows) => rows.filter((r) => r.status === "completed").length >= 3,
            "three firings"
          )
          const times = fired.map((row) => Date.parse(row.id.slice(`sched:${CODE_ID}:`.length)))
          expect(times.every((t) => t % 1000 === 0)).toBe(true)
          expect(new Set(times).size).toBe(times.length)
          const record = yield* fetchJson(`${url}/workflows/executions/${encodeURIComponent(fired[0].id)}`)
          expect(record.body.data).toMatchObject({
            workflowId: "tick",
            status: "completed",
            output: { n: 1, userId: `system:schedule/${CODE_ID}` }
          })
          const listed = yield* fetchJson(`${url}/workflows/tick/schedules`)
          expect(listed.status).toBe(200)
          const summary = listed.body.data.find((s: any) => s.id === CODE_ID)
          expect(summary).toMatchObject({
            name: "every-second",
            source: "code",
            cron: "* * * * * *",
            catchUp: "all",
            paused: false
          })
          // A list carries neither the input nor the next times (issue #42): the schedule's own route does.
          expect(summary).not.toHaveProperty("input")
          expect(summary).not.toHaveProperty("nextFireTimes")
          const code = (yield* fetchJson(`${url}/workflows/tick/schedules/${CODE_ID}`)).body.data
          expect(code).toMatchObject({ input: { n: 1 }, nextFireAt: code.nextFireTimes[0] })
          expect(code.nextFireTimes).toHaveLength(5)
          expect(code.nextFireTimes.map(Date.parse)).toEqual(
            code.nextFireTimes.map((_: string, i: number) => Date.parse(code.nextFireTimes[0]) + i * 1000)
          )
        }))

      it.effect("each firing is a root span schedule.fire holding its execution's spans; metrics count fires and their lag", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOfServer
          const fired = yield* eventually(
            firedOf(sql, CODE_ID),
            (rows) => rows.some((r) => r.status === "completed"),
            "a firing"
          )
          const execution =
            (yield* fetchJson(`${url}/workflows/executions/${encodeURIComponent(fired[0].id)}`)).body.data
          const traces = yield* eventually(
            Effect.map(
              fetchJson(`${url}/observability/traces?entityType=workflow&entityId=tick&limit=100`),
              (r) => r.body.data.traces as Array<any>
            ),
            (traces) => traces.some((trace) => trace.traceId === execution.metadata.traceId),
            "the firing's trace"
          )
          const trace = traces.find((t) => t.traceId === execution.metadata.traceId)
          expect(trace.name).toBe("schedule.fire")
          expect(trace.spanCount).toBeGreaterThan(1)
          const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((response) => response.text()))
          expect(metrics).toMatch(/^workflow_schedule_fires_total\{[^}]*\} [1-9]/m)
          expect(metrics).toMatch(/^workflow_schedule_fire_lag_count\{[^}]*\} [1-9]/m)
        }))

      it.effect("a code schedule cannot be deleted (409); paused it stops firing, resumed it fires again from then", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOfServer
          const path = `${url}/workflows/tick/schedules/${CODE_ID}`
          const deleted = yield* call(path, "DELETE")
          expect(deleted.status).toBe(409)
          expect(deleted.body.error).toContain("declared in workflow tick's code")
          // One the code declared once and no longer does (a deploy removed it): deleted.
          const retired = "code.tick.retired"
          yield* sql`INSERT INTO workflow_schedules (id, workflow_id, name, source, owner_key, user_id, cron, timezone, input, catch_up,
          paused, next_fire_at, failures, created_at, updated_at) VALUES (${retired}, 'tick', 'retired', 'code', 'system', NULL,
          '0 3 * * *', NULL, '{"n":1}', 'none', 0, '2100-01-01T03:00:00.000Z', 0, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`
          const gone = yield* call(`${url}/workflows/tick/schedules/${retired}`, "DELETE")
          expect(gone.status).toBe(200)
          expect((yield* call(`${url}/workflows/tick/schedules/${retired}`, "GET")).status).toBe(404)
          const paused = yield* call(`${path}/pause`, "POST", {})
          expect(paused.status).toBe(200)
          expect(paused.body.data).toMatchObject({ paused: true, nextFireAt: null, nextFireTimes: [] })
          // A firing that had begun may still commit: count after it settles, then nothing more.
          yield* Effect.sleep("300 millis")
          const before = (yield* firedOf(sql, CODE_ID)).length
          yield* Effect.sleep("2500 millis")
          expect((yield* firedOf(sql, CODE_ID)).length).toBe(before)
          const resumed = yield* call(`${path}/resume`, "POST", {})
          expect(resumed.body.data).toMatchObject({ paused: false, failures: 0 })
          expect(Date.parse(resumed.body.data.nextFireAt)).toBeGreaterThan(Date.now() - 1000)
          yield* eventually(firedOf(sql, CODE_ID), (rows) => rows.length >= before + 2, "firing again")
          // Times passed while paused were skipped, even under catchUp "all".
          const after = (yield* firedOf(sql, CODE_ID)).slice(before).map((row) =>
            Date.parse(row.id.slice(`sched:${CODE_ID}:`.length))
          )
          expect(after[0]).toBeGreaterThanOrEqual(Date.parse(resumed.body.data.nextFireAt))
        }))

      it.effect("CRUD: create (201) fires; 400 naming a bad cron, time zone, input or seconds under the minimum; 404 unknown; 409 same name; delete", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOfServer
          const base = `${url}/workflows/plain/schedules`
          const bad = [
            [{ cron: "61 * * * *", input: { n: 1 } }, `cron "61 * * * *" is invalid`],
            [{ cron: "* * * * *", timezone: "Mars/Olympus", input: { n: 1 } }, `timezone "Mars/Olympus"`],
            [{ cron: "* * * * *", input: { n: "one" } }, "input does not fit"],
            [{ cron: "*/2 * * * *", input: { n: 1 }, catchUp: "some" }, "catchUp"],
            [{ cron: "* * * * * * *", input: { n: 1 } }, "must have 5 fields"],
            // Issue #42: refused before any walk through the time zone.
            [
              { cron: "0 0 31 2 *", timezone: "Europe/Berlin", input: { n: 1 } },
              "never fires: its day-of-month and month only make dates that do not exist (February 31)"
            ]
          ] as const
          for (const [body, message] of bad) {
            const answer = yield* call(base, "POST", body)
            expect(answer.status).toBe(400)
            expect(answer.body.success).toBe(false)
            expect(String(answer.body.error)).toContain(message)
          }
          expect((yield* call(`${url}/workflows/nope/schedules`, "POST", { cron: "* * * * *", input: {} })).status)
            .toBe(404)
          const created = yield* call(base, "POST", {
            name: "often",
            cron: "*/2 * * * * *",
            input: { n: 7 },
            catchUp: "latest"
          })
          expect(created.status).toBe(201)
          expect(created.body.data).toMatchObject({
            workflowId: "plain",
            name: "often",
            source: "api",
            paused: false,
            input: { n: 7 }
          })
          const id = created.body.data.id as string
          expect((yield* call(base, "POST", { name: "often", cron: "* * * * *", input: { n: 1 } })).status).toBe(409)
          const fired = yield* eventually(
            firedOf(sql, id),
            (rows) => rows.some((r) => r.status === "completed"),
            "the API schedule fired"
          )
          expect(fired[0].id).toMatch(new RegExp(`^sched:${id}:`))
          const all = yield* fetchJson(`${url}/schedules`)
          expect(all.body.data.map((s: any) => s.id)).toEqual(expect.arrayContaining([id, CODE_ID]))
          expect((yield* fetchJson(`${base}/${id}`)).body.data).toMatchObject({
            id,
            lastExecutionId: expect.stringMatching(/^sched:/)
          })
          expect((yield* fetchJson(`${url}/workflows/tick/schedules/${id}`)).status).toBe(404)
          const gone = yield* call(`${base}/${id}`, "DELETE")
          expect(gone.body.data).toEqual({ scheduleId: id, workflowId: "plain", deleted: true })
          expect((yield* fetchJson(`${base}/${id}`)).status).toBe(404)
          // Its executions stay.
          expect((yield* firedOf(sql, id)).length).toBeGreaterThan(0)
        }))

      it.effect("an input that no longer fits fails each firing, recorded on the schedule, which pauses itself after 5 in a row", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOfServer
          const created = yield* call(`${url}/workflows/plain/schedules`, "POST", {
            name: "breaks",
            cron: "* * * * * *",
            input: { n: 1 }
          })
          const id = created.body.data.id as string
          yield* sql`UPDATE workflow_schedules SET input = ${JSON.stringify({ n: "not a number" })} WHERE id = ${id}`
            .pipe(Effect.orDie)
          const paused = yield* eventually(
            Effect.map(fetchJson(`${url}/workflows/plain/schedules/${id}`), (r) => r.body.data),
            (s) => s.paused === true,
            "paused after five failures",
            20_000
          )
          expect(paused.failures).toBe(5)
          expect(paused.lastError).toContain("n")
          expect((yield* firedOf(sql, id)).filter((row) => row.id.endsWith(paused.lastFiredAt ?? "never"))).toEqual([])
        }))
    }
  )

  const SECRET = "a-long-shared-secret-for-schedule-tests"
  const sign = (claims: Record<string, unknown>) =>
    Effect.promise(() =>
      new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
        new TextEncoder().encode(SECRET)
      )
    )
  const jwt = {
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

  layer(TestServerLive({ app: schedulesApp, config: { ...testScheduleConfig, ...jwt } }), {
    excludeTestServices: true
  })("under JWT", (it) => {
    it.effect("a schedule and its executions are its creator's: another user gets 404, an admin sees all; code schedules are the admin's", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const sql = yield* sqlOfServer
        const alice = yield* sign({ sub: "alice" })
        const bob = yield* sign({ sub: "bob" })
        const admin = yield* sign({ sub: "root", roles: ["admin"] })
        const base = `${url}/workflows/plain/schedules`
        expect((yield* call(base, "POST", { cron: "* * * * *", input: { n: 1 } })).status).toBe(401)
        const created = yield* call(base, "POST", { name: "mine", cron: "* * * * * *", input: { n: 2 } }, alice)
        expect(created.status).toBe(201)
        const id = created.body.data.id as string
        for (const [method, path] of [["GET", ""], ["POST", "/pause"], ["POST", "/resume"], ["DELETE", ""]] as const) {
          const answer = yield* call(`${base}/${id}${path}`, method, method === "POST" ? {} : undefined, bob)
          expect([method, path, answer.status]).toEqual([method, path, 404])
        }
        expect((yield* call(base, "GET", undefined, bob)).body.data).toEqual([])
        expect((yield* call(`${url}/schedules`, "GET", undefined, alice)).body.data.map((s: any) => s.id)).toEqual([id])
        expect((yield* call(`${url}/schedules`, "GET", undefined, admin)).body.data.map((s: any) => s.id)).toEqual(
          expect.arrayContaining([id, CODE_ID])
        )
        expect((yield* call(`${url}/workflows/tick/schedules/${CODE_ID}`, "GET", undefined, alice)).status).toBe(404)
        // Bob may use the same name: names are unique per owner.
        expect((yield* call(base, "POST", { name: "mine", cron: "* * * * *", input: { n: 3 } }, bob)).status).toBe(201)
        const fired = yield* eventually(
          firedOf(sql, id),
          (rows) => rows.some((r) => r.status === "completed"),
          "alice's schedule fired"
        )
        expect(fired.every((row) => row.user_id === "alice")).toBe(true)
        const executionId = encodeURIComponent(fired[0].id)
        expect((yield* call(`${url}/workflows/executions/${executionId}`, "GET", undefined, alice)).status).toBe(200)
        expect((yield* call(`${url}/workflows/executions/${executionId}`, "GET", undefined, bob)).status).toBe(404)
        const code = yield* eventually(firedOf(sql, CODE_ID), (rows) => rows.length > 0, "the code schedule fired")
        const codeExecution = encodeURIComponent(code[0].id)
        expect((yield* call(`${url}/workflows/executions/${codeExecution}`, "GET", undefined, alice)).status).toBe(404)
        expect((yield* call(`${url}/workflows/executions/${codeExecution}`, "GET", undefined, admin)).status).toBe(200)
      }))

    it.effect(
      "at most 100 schedules per owner: the 101st is a 400 saying so; another owner is not counted with them",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const carol = yield* sign({ sub: "carol" })
          const dave = yield* sign({ sub: "dave" })
          const base = `${url}/workflows/plain/schedules`
          for (let i = 0; i < 100; i++) {
            const created = yield* call(
              base,
              "POST",
              { name: `yearly-${i}`, cron: "0 0 1 1 *", input: { n: i } },
              carol
            )
            expect(created.status).toBe(201)
          }
          const over = yield* call(base, "POST", { name: "one-more", cron: "0 0 1 1 *", input: { n: 0 } }, carol)
          expect(over.status).toBe(400)
          expect(over.body.error).toContain("At most 100 schedules per owner")
          expect((yield* call(base, "POST", { name: "one-more", cron: "0 0 1 1 *", input: { n: 0 } }, dave)).status)
            .toBe(201)
        }),
      60_000
    )
  })
})
