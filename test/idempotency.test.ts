import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { defineApp } from "../src/App.js"
import { approval, pipeline, slow } from "../src/examples/workflows.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { IdempotencyKeys, requestHash } from "../src/workflows/execution/IdempotencyKeys.js"
import { parseSse } from "./support/fakeProvider.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

const failing = workflow({
  id: "failing",
  name: "Failing",
  purpose: "fails",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "explode", execute: () => Promise.reject(new Error("disk on fire")) })

const app = defineApp({ workflows: [approval, pipeline, slow, failing] })

type Route = "execute" | "run" | "stream"

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

const keyed = (key: string | undefined, extra: Record<string, string> = {}) =>
  key === undefined ? extra : { "idempotency-key": key, ...extra }

/** POST /workflows/:id/:route with an Idempotency-Key (and a raw or JSON body). */
const start = (
  url: string,
  route: Route,
  workflowId: string,
  body: unknown,
  key?: string,
  headers: Record<string, string> = {}
) => fetchJson(`${url}/workflows/${workflowId}/${route}`, post(body, keyed(key, headers)))

const stream = (url: string, workflowId: string, body: unknown, key?: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/workflows/${workflowId}/stream`, post(body, keyed(key)))
    const text = await response.text()
    return { status: response.status, events: response.ok ? parseSse(text) : [], text }
  })

/** The executions of a workflow, as the listing shows them. */
const executionsOf = (url: string, workflowId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/executions?workflowId=${workflowId}&limit=500`),
    (r) => r.body.data as Array<any>
  )

const waitForRunning = (url: string, workflowId: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 400; i++) {
      const listed = await fetch(`${url}/workflows/executions?workflowId=${workflowId}&status=running`).then((r) =>
        r.json()
      )
      if (listed.data.length > 0) return listed.data[0].id as string
      await new Promise((r) => setTimeout(r, 10))
    }
    throw new Error(`no ${workflowId} execution ever ran`)
  })

let keyCounter = 0
const freshKey = () => `key-${process.pid}-${++keyCounter}-${Math.random().toString(36).slice(2)}`

/** 20 trials of 20 concurrent /run with one key: each trial makes one execution. */
const raceTrials = Effect.gen(function*() {
  const { url } = yield* TestServer
  for (let trial = 0; trial < 20; trial++) {
    const key = freshKey()
    const before = (yield* executionsOf(url, "pipeline")).length
    const answers = yield* Effect.all(
      Array.from({ length: 20 }, () => start(url, "run", "pipeline", { input: { text: `t${trial}`, n: trial } }, key)),
      { concurrency: "unbounded" }
    )
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201))
    expect(new Set(answers.map((a) => a.body.data.executionId)).size).toBe(1)
    expect((yield* executionsOf(url, "pipeline")).length).toBe(before + 1)
  }
})

/** 10 concurrent /execute, then 10 concurrent /stream, each with one key: one execution each, one answer. */
const concurrentStarts = Effect.gen(function*() {
  const { url } = yield* TestServer
  const executeKey = freshKey()
  const executed = yield* Effect.all(
    Array.from({ length: 10 }, () => start(url, "execute", "slow", { input: { ms: 50 } }, executeKey)),
    { concurrency: "unbounded" }
  )
  expect(executed.map((a) => a.status)).toEqual(Array(10).fill(200))
  expect(new Set(executed.map((a) => JSON.stringify(a.body))).size).toBe(1)
  const streamKey = freshKey()
  const streamed = yield* Effect.all(
    Array.from({ length: 10 }, () => stream(url, "slow", { input: { ms: 51 } }, streamKey)),
    { concurrency: "unbounded" }
  )
  const shapes = streamed.map((s) => JSON.stringify(s.events.map((e) => [e.id, e.data.type, e.data.executionId])))
  expect(new Set(shapes).size).toBe(1)
  expect(streamed[0].events.at(-1)!.data).toMatchObject({ type: "workflow-result", status: "completed" })
  const listed = yield* executionsOf(url, "slow")
  expect(listed.filter((e) => e.input.ms === 50 || e.input.ms === 51)).toHaveLength(2)
})

/** Expired keys are deleted in batches (here two: more than one batch of 500), live ones kept. */
const pruneExpired = Effect.gen(function*() {
  const { services } = yield* TestServer
  const sql = Context.get(services, SqlClient.SqlClient)
  const keys = Context.get(services, IdempotencyKeys)
  const past = new Date(Date.now() - 1_000).toISOString()
  const row = (key: string, expiresAt: string) => ({
    route: "run",
    workflow_id: "prune-test",
    caller: "",
    idempotency_key: key,
    request_hash: "h",
    execution_id: key,
    created_at: past,
    expires_at: expiresAt
  })
  const expired = Array.from({ length: 600 }, (_, i) => row(`expired-${i}`, past))
  yield* sql`INSERT INTO workflow_idempotency_keys ${sql.insert([...expired, row("live", "9999-01-01T00:00:00.000Z")])}`
  expect(yield* keys.prune).toBeGreaterThanOrEqual(600)
  const left = yield* sql<
    { idempotency_key: string }
  >`SELECT idempotency_key FROM workflow_idempotency_keys WHERE workflow_id = 'prune-test'`
  expect(left.map((r) => r.idempotency_key)).toEqual(["live"])
})

layer(TestServerLive({ app }), { excludeTestServices: true })("Idempotency-Key on workflow starts (SQLite)", (it) => {
  it.effect("/run: a retry answers 201 with the first execution and its current status; one execution", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const body = { input: { ms: 300 } }
      const first = yield* start(url, "run", "slow", body, key)
      expect(first.status).toBe(201)
      expect(first.body.data.status).toBe("running")
      const retry = yield* start(url, "run", "slow", body, key)
      expect(retry.status).toBe(201)
      expect(retry.body.data).toEqual(first.body.data)
      // Settled: the retry reports the execution as it is now.
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 400)))
      const later = yield* start(url, "run", "slow", body, key)
      expect(later.body.data).toMatchObject({
        executionId: first.body.data.executionId,
        workflowId: "slow",
        status: "completed"
      })
      const listed = yield* executionsOf(url, "slow")
      expect(listed.filter((e) => e.input.ms === 300).map((e) => e.id)).toEqual([first.body.data.executionId])
    }))

  it.effect("/execute: a retry returns the same result; key order in the body does not matter", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const first = yield* start(url, "execute", "pipeline", {
        input: { text: " hi ", n: 2 },
        options: { context: { a: 1, b: 2 } }
      }, key)
      expect(first.status).toBe(200)
      expect(first.body.data.result).toMatchObject({ upper: "HI" })
      const reordered = `{"options":{"context":{"b":2,"a":1}},"input":{"n":2,"text":" hi "}}`
      const retry = yield* start(url, "execute", "pipeline", reordered, key)
      expect(retry.status).toBe(200)
      expect(retry.body).toEqual(first.body)
    }))

  it.effect("/execute retried while the first is still running waits and returns the same completed result", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const body = { input: { ms: 600 } }
      const first = yield* Effect.fork(start(url, "execute", "slow", body, key))
      const runningId = yield* waitForRunning(url, "slow")
      const retry = yield* start(url, "execute", "slow", body, key)
      const original = yield* first.await.pipe(Effect.flatten)
      expect(original.status).toBe(200)
      expect(original.body.data).toMatchObject({
        executionId: runningId,
        status: "completed",
        result: { waitedMs: 600 }
      })
      expect(retry.status).toBe(200)
      expect(retry.body).toEqual(original.body)
      expect((yield* executionsOf(url, "slow")).filter((e) => e.input.ms === 600)).toHaveLength(1)
    }))

  it.effect("/execute: a failed first attempt is returned again, same status and envelope", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const first = yield* start(url, "execute", "failing", {}, key)
      expect(first.status).toBe(500)
      expect(first.body).toEqual({
        success: false,
        error: expect.stringContaining("disk on fire"),
        executionId: expect.any(String)
      })
      const retry = yield* start(url, "execute", "failing", {}, key)
      expect(retry.status).toBe(500)
      expect(retry.body).toEqual(first.body)
      expect(yield* executionsOf(url, "failing")).toHaveLength(1)
    }))

  it.effect("/stream: a retry streams the same execution from its first event to its result", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const body = { input: { text: "abc", n: 5 } }
      const first = yield* stream(url, "pipeline", body, key)
      expect(first.status).toBe(200)
      expect(first.events.at(-1)!.data).toMatchObject({ type: "workflow-result", status: "completed" })
      const retry = yield* stream(url, "pipeline", body, key)
      expect(retry.status).toBe(200)
      expect(retry.events.map((e) => [e.id, e.data.type])).toEqual(first.events.map((e) => [e.id, e.data.type]))
      expect(retry.events.at(-1)!.data).toEqual(first.events.at(-1)!.data)
      // Retried while running: the events so far, the live ones, then the result.
      const slowKey = freshKey()
      const running = yield* Effect.fork(stream(url, "slow", { input: { ms: 400 } }, slowKey))
      const id = yield* waitForRunning(url, "slow")
      const joined = yield* stream(url, "slow", { input: { ms: 400 } }, slowKey)
      const original = yield* running.await.pipe(Effect.flatten)
      expect(joined.events.map((e) => e.data.type)).toEqual(original.events.map((e) => e.data.type))
      expect(joined.events.at(-1)!.data).toMatchObject({
        type: "workflow-result",
        executionId: id,
        status: "completed"
      })
    }))

  it.effect("the same key with another body is 422 with the envelope; a malformed key is 400", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      expect((yield* start(url, "run", "pipeline", { input: { text: "a", n: 1 } }, key)).status).toBe(201)
      for (const route of ["run", "execute", "stream"] as const) {
        if (route !== "run") {
          expect((yield* start(url, route, "pipeline", { input: { text: "a", n: 1 } }, key)).status).toBe(200)
        }
        const other = yield* start(url, route, "pipeline", { input: { text: "a", n: 2 } }, key)
        expect(other.status).toBe(422)
        expect(other.body).toEqual({
          success: false,
          error: expect.stringContaining("already used with another request body")
        })
      }
      // Other control characters never reach the service: Node's HTTP parser refuses them.
      for (const bad of ["", "x".repeat(256), "tab\there", "caf\u00e9"]) {
        const refused = yield* start(url, "run", "pipeline", { input: { text: "a", n: 1 } }, bad)
        expect(refused.status).toBe(400)
        expect(refused.body).toEqual({ success: false, error: expect.stringContaining("idempotency-key") })
        expect(refused.body.error).toContain("1 to 255 printable ASCII characters")
      }
      expect((yield* start(url, "run", "pipeline", { input: { text: "a", n: 1 } }, "x".repeat(255))).status).toBe(201)
    }))

  it.effect("keys are scoped: another route or another workflow with the same key is independent", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const body = { input: { text: "s", n: 3 } }
      const run = yield* start(url, "run", "pipeline", body, key)
      const execute = yield* start(url, "execute", "pipeline", body, key)
      const streamed = yield* stream(url, "pipeline", body, key)
      const ids = [run.body.data.executionId, execute.body.data.executionId, streamed.events[0].data.executionId]
      expect(new Set(ids).size).toBe(3)
      // Within its scope the key still holds.
      expect((yield* start(url, "run", "pipeline", body, key)).body.data.executionId).toBe(ids[0])
      expect((yield* start(url, "execute", "pipeline", body, key)).body.data.executionId).toBe(ids[1])
      const otherWorkflow = yield* start(url, "run", "approval", { input: { amount: 5 } }, key)
      expect(otherWorkflow.status).toBe(201)
      expect(ids).not.toContain(otherWorkflow.body.data.executionId)
      // Without a key every request starts its own execution.
      const a = yield* start(url, "run", "pipeline", body)
      const b = yield* start(url, "run", "pipeline", body)
      expect(a.body.data.executionId).not.toBe(b.body.data.executionId)
    }))

  it.effect("options.executionId is the id kept with the key; a fresh key with a taken id is 400 and not kept", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const key = freshKey()
      const executionId = `chosen-${keyCounter}`
      const body = { input: { text: "c", n: 1 }, options: { executionId } }
      const first = yield* start(url, "run", "pipeline", body, key)
      expect(first.body.data.executionId).toBe(executionId)
      const retry = yield* start(url, "run", "pipeline", body, key)
      expect(retry.status).toBe(201)
      expect(retry.body.data.executionId).toBe(executionId)
      const otherKey = freshKey()
      const taken = yield* start(url, "run", "pipeline", body, otherKey)
      expect(taken.status).toBe(400)
      expect(taken.body).toEqual({ success: false, error: `Execution ${executionId} already exists` })
      // Not kept: the key is free for a request that can succeed.
      const fresh = yield* start(url, "run", "pipeline", { input: { text: "c", n: 1 } }, otherKey)
      expect(fresh.status).toBe(201)
    }))

  it.effect("a key stored without its execution (a crash between the writes) creates it under the stored id", () =>
    Effect.gen(function*() {
      const { services, url } = yield* TestServer
      const keys = Context.get(services, IdempotencyKeys)
      const key = freshKey()
      const body = { input: { text: "stranded", n: 1 } }
      const claimed = yield* keys.claim(
        { route: "run", workflowId: "pipeline", caller: "", key },
        requestHash(body),
        `stranded-${keyCounter}`
      )
      expect(claimed.fresh).toBe(true)
      const answers = yield* Effect.all(Array.from({ length: 5 }, () => start(url, "run", "pipeline", body, key)), {
        concurrency: "unbounded"
      })
      expect(answers.map((a) => [a.status, a.body.data.executionId])).toEqual(Array(5).fill([201, claimed.executionId]))
      expect((yield* executionsOf(url, "pipeline")).filter((e) => e.id === claimed.executionId)).toHaveLength(1)
    }))

  it.effect("20 concurrent /run with one key make exactly one execution (20 trials)", () => raceTrials, 120_000)

  it.effect("concurrent /execute and /stream with one key share one execution", () => concurrentStarts)

  it.effect("expired keys are pruned in batches; live ones stay", () => pruneExpired)

  it.effect("the header is declared on execute, run and stream in the OpenAPI document", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: doc } = yield* fetchJson(`${url}/doc`)
      for (const route of ["execute", "run", "stream"]) {
        const operation = doc.paths[`/workflows/{id}/${route}`].post
        const header = operation.parameters.find((p: any) => p.in === "header" && p.name === "idempotency-key")
        expect(header, route).toBeDefined()
        expect(header.required).toBe(false)
        expect(operation.responses["422"], route).toBeDefined()
      }
    }))
})

const ttlConfig = (ttlMs: number) => ({
  workflows: {
    leaseMs: 15_000,
    pollMs: 1_000,
    drainMs: 10_000,
    idempotencyTtlMs: ttlMs,
    maxQueuedPerKey: 1_000,
    maxExecutionBytes: 32 * 1024 * 1024,
    executeWaitMs: 30_000,
    recordReadsPerOwner: 4
  }
})

layer(TestServerLive({ app, config: ttlConfig(1_000) }), { excludeTestServices: true })(
  "Idempotency-Key lifetime",
  (it) => {
    it.effect(
      "an expired key counts as new, and expired keys are pruned in the background",
      () =>
        Effect.gen(function*() {
          const { services, url } = yield* TestServer
          const sql = Context.get(services, SqlClient.SqlClient)
          const key = freshKey()
          const body = { input: { text: "ttl", n: 1 } }
          const first = yield* start(url, "run", "pipeline", body, key)
          const retry = yield* start(url, "run", "pipeline", body, key)
          expect(retry.body.data.executionId).toBe(first.body.data.executionId)
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1_100)))
          // Expired: the same key (even with another body) is a new request.
          const again = yield* start(url, "run", "pipeline", { input: { text: "ttl", n: 2 } }, key)
          expect(again.status).toBe(201)
          expect(again.body.data.executionId).not.toBe(first.body.data.executionId)
          const count = sql<{ n: number }>`SELECT COUNT(*) AS n FROM workflow_idempotency_keys`.pipe(
            Effect.map((rows) => Number(rows[0].n))
          )
          expect(yield* count).toBe(1)
          const deadline = Date.now() + 10_000
          while ((yield* count) > 0) {
            if (Date.now() > deadline) throw new Error("expired keys were never pruned")
            yield* Effect.sleep("50 millis")
          }
        }),
      20_000
    )
  }
)

const SECRET = "a-long-shared-secret-for-idempotency-tests"
const token = (sub: string) =>
  new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
    new TextEncoder().encode(SECRET)
  )
const auth = { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [] } }

layer(TestServerLive({ app, config: { auth } }), { excludeTestServices: true })("Idempotency-Key per caller", (it) => {
  it.effect("with authentication, each JWT subject has its own keys; the same subject shares them", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const [ada, bob, ada2] = yield* Effect.promise(() => Promise.all([token("ada"), token("bob"), token("ada")]))
      const key = freshKey()
      const body = { input: { text: "u", n: 1 } }
      const asAda = yield* start(url, "run", "pipeline", body, key, { authorization: `Bearer ${ada}` })
      const asBob = yield* start(url, "run", "pipeline", body, key, { authorization: `Bearer ${bob}` })
      const asAdaAgain = yield* start(url, "run", "pipeline", body, key, { authorization: `Bearer ${ada2}` })
      expect([asAda.status, asBob.status, asAdaAgain.status]).toEqual([201, 201, 201])
      expect(asBob.body.data.executionId).not.toBe(asAda.body.data.executionId)
      expect(asAdaAgain.body.data.executionId).toBe(asAda.body.data.executionId)
      // Another body under Bob's key is Bob's conflict only.
      expect(
        (yield* start(url, "run", "pipeline", { input: { text: "v", n: 1 } }, key, { authorization: `Bearer ${bob}` }))
          .status
      ).toBe(422)
    }))
})

describe.skipIf(!postgresAvailable)("Idempotency-Key on Postgres", () => {
  layer(PostgresTestServerLive({ app }), { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    it.effect("20 concurrent /run with one key make exactly one execution (20 trials)", () => raceTrials, 120_000)

    it.effect("concurrent /execute and /stream with one key share one execution", () => concurrentStarts)

    it.effect("expired keys are pruned in batches; live ones stay", () => pruneExpired)

    it.effect("/execute retry while running, and 422 for another body", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const key = freshKey()
        const first = yield* Effect.fork(start(url, "execute", "slow", { input: { ms: 300 } }, key))
        yield* waitForRunning(url, "slow")
        const [retry, other] = yield* Effect.all([
          start(url, "execute", "slow", { input: { ms: 300 } }, key),
          start(url, "execute", "slow", { input: { ms: 301 } }, key)
        ], { concurrency: 2 })
        const original = yield* first.await.pipe(Effect.flatten)
        expect(retry.body).toEqual(original.body)
        expect(other.status).toBe(422)
      }), 30_000)
  })
})
