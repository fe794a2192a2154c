import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Fiber, FiberId, HashMap, Layer, List, Logger, LogLevel } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { type LogEntry, LogStore, LogStoreLive, matches } from "../src/observability/LogStore.js"
import { pruneLogs } from "../src/observability/logTable.js"
import { ObservabilitySql, ObservabilitySqlLive } from "../src/observability/ObservabilitySql.js"
import { makeRemoteFeed } from "../src/observability/remoteFeed.js"
import { freshPostgresDatabase, postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

const DAY = 24 * 3600 * 1000

/** A LogStore on its own SQL store, and its logger as the only one. */
const storeOn = (url: string, retention: { maxEntries: number; maxAgeMs: number }) =>
  LogStoreLive({ instanceId: "test-instance", retention }).pipe(
    Layer.provideMerge(ObservabilitySqlLive(url)),
    Layer.provideMerge(DatabaseLive(url))
  )

const logThrough = (count: number, prefix: string) =>
  Effect.flatMap(
    LogStore,
    (store) =>
      Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => Effect.logInfo(`${prefix}${i}`), {
        discard: true
      }).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, store.logger))
      )
  )

/** Logs `count` entries in one synchronous loop, as a logger is called: the store's writer cannot run meanwhile. */
const logAtOnce = (store: Context.Tag.Service<typeof LogStore>, count: number, prefix: string) =>
  Effect.flatMap(Effect.getFiberRefs, (refs) =>
    Effect.sync(() => {
      for (let i = 0; i < count; i++) {
        store.logger.log({
          fiberId: FiberId.none,
          logLevel: LogLevel.Info,
          message: `${prefix}${i}`,
          cause: Cause.empty,
          context: refs,
          spans: List.empty(),
          annotations: HashMap.empty(),
          date: new Date()
        })
      }
    }))

const insertAt = (sql: SqlClient.SqlClient, message: string, loggedAt: string) =>
  sql`INSERT INTO observability_logs (instance, logged_at, level, level_rank, message, attributes)
    VALUES ('old-instance', ${loggedAt}, 'info', 2, ${message}, '{}')`

const until = <A, E, R>(check: Effect.Effect<A, E, R>, done: (a: A) => boolean, ms = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    let value = yield* check
    while (!done(value) && Date.now() < deadline) {
      yield* Effect.sleep("20 millis")
      value = yield* check
    }
    return value
  })

describe("durable logs", () => {
  it.scopedLive("the log is kept in the store: a new process on the same file reads what the last one logged", () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "logs.db")}`
      const retention = { maxEntries: 10_000, maxAgeMs: DAY }
      // Closed right after logging: what was still waiting is written on the way out.
      yield* Effect.scoped(Effect.provide(logThrough(3, "before restart "), Layer.fresh(storeOn(url, retention))))
      const kept = yield* Effect.scoped(Effect.provide(
        Effect.flatMap(LogStore, (store) => store.query({ limit: 100 })),
        Layer.fresh(storeOn(url, retention))
      ))
      expect(kept.map((entry) => entry.message)).toEqual(["before restart 0", "before restart 1", "before restart 2"])
      expect(kept[0]).toMatchObject({ level: "info", instance: "test-instance", attributes: {} })
    }))

  it.scopedLive("retention drops entries past the age limit, then the oldest beyond maxEntries, in chunks", () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "retention.db")}`
      const context = yield* Layer.build(DatabaseLive(url))
      const sql = Context.get(context, SqlClient.SqlClient)
      const old = new Date(Date.now() - 2 * DAY).toISOString()
      const recent = (i: number) => new Date(Date.now() - 60_000 + i).toISOString()
      yield* sql.withTransaction(
        Effect.forEach(Array.from({ length: 1_200 }, (_, i) => i), (i) => insertAt(sql, `old ${i}`, old))
      )
      yield* sql.withTransaction(
        Effect.forEach(Array.from({ length: 1_700 }, (_, i) => i), (i) => insertAt(sql, `recent ${i}`, recent(i)))
      )

      yield* pruneLogs(sql, { maxEntries: 10_000, maxAgeMs: DAY })
      const afterAge = yield* sql<{ message: string }>`SELECT message FROM observability_logs ORDER BY logged_at, id`
      expect(afterAge).toHaveLength(1_700)
      expect(afterAge[0].message).toBe("recent 0")

      // More than one chunk (500) beyond the limit: the newest 300 stay.
      yield* pruneLogs(sql, { maxEntries: 300, maxAgeMs: DAY })
      const afterCount = yield* sql<{ message: string }>`SELECT message FROM observability_logs ORDER BY logged_at, id`
      expect(afterCount.map((row) => row.message)).toEqual(Array.from({ length: 300 }, (_, i) => `recent ${1_400 + i}`))
    }))

  it.scopedLive("the store prunes by itself once maxEntries more have been written", () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "self-prune.db")}`
      const context = yield* Layer.build(storeOn(url, { maxEntries: 250, maxAgeMs: DAY }))
      const store = Context.get(context, LogStore)
      // At once, so that one write takes them all and the prune that follows it leaves exactly 250.
      yield* logAtOnce(store, 1_800, "entry ")
      const count = yield* until(store.count, (n) => n <= 250)
      expect(count).toBe(250)
      const newest = yield* store.query({ limit: 1_000 })
      expect(newest[0].message).toBe("entry 1550")
      expect(newest.at(-1)!.message).toBe("entry 1799")
      expect(yield* store.dropped).toBe(0)
    }))

  it.scopedLive(
    "a burst the writer cannot keep up with drops the oldest entries and counts them; logging never waits",
    () =>
      Effect.gen(function*() {
        const url = `file:${join(yield* tempDir, "burst.db")}`
        const context = yield* Layer.build(storeOn(url, { maxEntries: 100_000, maxAgeMs: DAY }))
        const store = Context.get(context, LogStore)
        // One synchronous loop: the writer cannot run until it ends, so the backlog (20,000) overflows.
        yield* logAtOnce(store, 25_000, "burst ")
        expect(yield* store.dropped).toBe(5_000)
        const stored = yield* store.query({ limit: 1_000, until: new Date(Date.now() + 60_000).toISOString() })
        expect(stored.at(-1)!.message).toBe("burst 24999")
        expect(yield* store.count).toBe(20_000)
        const [oldest] = yield* Effect.provide(
          Effect.flatMap(
            ObservabilitySql,
            (sql) => sql<{ message: string }>`SELECT message FROM observability_logs ORDER BY id LIMIT 1`
          ),
          context
        )
        expect(oldest.message).toBe("burst 5000")
      }),
    60_000
  )
})

/** Every filter of /api/logs answers what filtering the whole log in memory answers. */
const filtersAgree = Effect.gen(function*() {
  const { config, url } = yield* TestServer
  yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "hello", options: { conversationId: "sql-conv" } }))
  const run = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 5 } }))
  const executionId = run.body.data.executionId
  yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))
  yield* fetchJson(`${url}/tools/nope/execute`, json({ input: {} }))

  const all: Array<LogEntry> = (yield* fetchJson(`${url}/api/logs?limit=1000`)).body.data
  expect(all.length).toBeGreaterThan(5)
  expect(all.every((entry) => entry.instance === config.instanceId)).toBe(true)
  for (let i = 1; i < all.length; i++) expect(all[i - 1].timestamp <= all[i].timestamp).toBe(true)
  const withExecution = all.find((entry) => entry.executionId === executionId)!
  const middle = all[Math.floor(all.length / 2)].timestamp
  const filters: Array<Record<string, string>> = [
    { agentId: "assistant" },
    { conversationId: "sql-conv" },
    { workflowId: "approval", executionId },
    { executionId },
    { level: "warn" },
    { level: "error" },
    { level: "debug", workflowId: "pipeline" },
    { since: middle },
    { until: middle },
    { since: middle, until: middle },
    { agentId: "assistant", limit: "1" },
    { workflowId: "pipeline", limit: "2" }
  ]
  for (const filter of filters) {
    const { limit, ...rest } = filter
    const expected = all.filter((entry) => matches(entry, rest)).slice(-Number(limit ?? 100))
    const answered = (yield* fetchJson(`${url}/api/logs?${new URLSearchParams(filter)}`)).body.data
    expect(answered, JSON.stringify(filter)).toEqual(expected)
  }
  const traceId = withExecution.traceId!
  const inTrace = (yield* fetchJson(`${url}/observability/logs?traceId=${traceId}`)).body.data
  expect(inTrace).toEqual(all.filter((entry) => entry.traceId === traceId))
  const inSpan = (yield* fetchJson(`${url}/observability/spans/${withExecution.spanId}/logs`)).body.data
  expect(inSpan.logs).toEqual(all.filter((entry) => entry.spanId === withExecution.spanId))
})

layer(TestServerLive(), { excludeTestServices: true })("/api/logs through SQL on SQLite", (it) => {
  it.effect("every filter and the limit agree with filtering the whole log; entries name their instance", () =>
    filtersAgree)
})

describe.skipIf(!postgresAvailable)("logs on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("/api/logs through SQL on Postgres", (it) => {
    it.effect(
      "every filter and the limit agree with filtering the whole log; entries name their instance",
      () => filtersAgree,
      60_000
    )
  })

  it.scopedLive(
    "the feed of another instance's rows loses none that commit out of order",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        const context = yield* Layer.build(DatabaseLive(url))
        const sql = Context.get(context, SqlClient.SqlClient)
        const seen: Array<string> = []
        const feed = makeRemoteFeed<{ message: string }>({
          sql,
          table: "observability_logs",
          seq: "id",
          instanceId: "me",
          isWatched: () => true,
          publish: (row) => seen.push(row.message)
        })
        yield* feed.start
        // The first insert takes its number and holds its transaction open while a later one commits.
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = yield* sql.withTransaction(Effect.gen(function*() {
          yield* insertAt(sql, "numbered first, committed last", new Date().toISOString())
          yield* Deferred.succeed(inserted, undefined)
          yield* Deferred.await(release)
        })).pipe(Effect.fork)
        yield* Deferred.await(inserted)
        yield* insertAt(sql, "numbered second, committed first", new Date().toISOString())
        yield* sql`INSERT INTO observability_logs (instance, logged_at, level, level_rank, message, attributes)
        VALUES ('me', ${new Date().toISOString()}, 'info', 2, 'my own', '{}')`
        yield* feed.poll
        expect(seen).toEqual(["numbered second, committed first"])
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(slow)
        yield* feed.poll
        expect(seen).toEqual(["numbered second, committed first", "numbered first, committed last"])
        yield* feed.poll
        expect(seen).toHaveLength(2)
      }),
    30_000
  )
})
