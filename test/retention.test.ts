import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, type Duration, Effect, Layer, type Scope } from "effect"
import { join } from "node:path"
import type { RecordRetentionSettings } from "../src/config/ServerConfig.js"
import { DatabaseLive } from "../src/Database.js"
import {
  conversationMessages,
  finishedExecutions,
  historyEntries,
  type Prunable,
  prune
} from "../src/retention/pruning.js"
import { RecordRetention, RecordRetentionLive } from "../src/retention/RecordRetention.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

const DAY = 24 * 3600 * 1000
const ago = (ms: number) => new Date(Date.now() - ms).toISOString()

const SETTINGS: RecordRetentionSettings = {
  executions: { maxCount: undefined, maxAgeMs: 30 * DAY },
  conversations: { maxCount: undefined, maxAgeMs: 90 * DAY }
}

type Status = "running" | "suspended" | "completed" | "error" | "cancelled"

/** An execution row as the store writes it, with `events` events and, if asked, an Idempotency-Key. */
const insertExecution = (
  sql: SqlClient.SqlClient,
  e: {
    readonly id: string
    readonly status: Status
    readonly at: string
    readonly endedAt: string | null
    readonly events?: number
    readonly key?: boolean
  }
) =>
  Effect.gen(function*() {
    const events = e.events ?? 3
    yield* sql`INSERT INTO workflow_executions ${
      sql.insert({
        id: e.id,
        workflow_id: "pipeline",
        workflow_name: "Pipeline",
        status: e.status,
        input: "{}",
        context: "{}",
        step_index: 0,
        step_data: "{}",
        metadata: "{}",
        version: 0,
        last_seq: events,
        created_at: e.at,
        updated_at: e.endedAt ?? e.at,
        ended_at: e.endedAt
      })
    }`
    for (let seq = 1; seq <= events; seq++) {
      yield* sql`INSERT INTO workflow_events ${sql.insert({ execution_id: e.id, seq, event: "{}", created_at: e.at })}`
    }
    if (e.key === true) {
      yield* sql`INSERT INTO workflow_idempotency_keys ${
        sql.insert({
          route: "run",
          workflow_id: "pipeline",
          caller: "anonymous",
          idempotency_key: `key-${e.id}`,
          request_hash: "h",
          execution_id: e.id,
          created_at: e.at,
          expires_at: new Date(Date.now() + DAY).toISOString()
        })
      }`
    }
  })

const ids = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ id: string }>`SELECT id FROM workflow_executions ORDER BY id`, (rows) => rows.map((row) => row.id))
const eventCount = (sql: SqlClient.SqlClient, id: string) =>
  Effect.map(
    sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM workflow_events WHERE execution_id = ${id}`,
    ([row]) => Number(row.n)
  )
const keyOwners = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ execution_id: string }>`SELECT execution_id FROM workflow_idempotency_keys ORDER BY execution_id`,
    (rows) => rows.map((row) => row.execution_id)
  )

const insertMessage = (sql: SqlClient.SqlClient, conversationId: string, at: string) =>
  sql`INSERT INTO agent_messages ${
    sql.insert({ agent_id: "assistant", conversation_id: conversationId, user_id: null, message: "{}", created_at: at })
  }`
const insertWorkingMemory = (sql: SqlClient.SqlClient, scope: string, key: string, at: string) =>
  sql`INSERT INTO agent_working_memory ${
    sql.insert({ agent_id: "assistant", scope, key, user_id: key, value: "{}", version: 1, updated_at: at })
  }`
const insertHistory = (sql: SqlClient.SqlClient, id: string, conversationId: string, at: string) =>
  sql`INSERT INTO agent_history ${
    sql.insert({
      id,
      agent_id: "assistant",
      conversation_id: conversationId,
      user_id: null,
      input: "\"hi\"",
      output: "hello",
      status: "completed",
      start_time: at,
      end_time: at,
      usage: null,
      tool_calls: "[]"
    })
  }`
const insertApproval = (sql: SqlClient.SqlClient, id: string, status: string, at: string) =>
  sql`INSERT INTO agent_tool_approvals ${
    sql.insert({
      id,
      agent_id: "assistant",
      call_id: `call-${id}`,
      owned: 0,
      owner: null,
      conversation_id: "c",
      tool_name: "refund",
      tool_call_id: `tc-${id}`,
      input_hash: "h",
      input: "{}",
      state: "{}",
      status,
      reason: null,
      expires_at: new Date(Date.parse(at) + DAY).toISOString(),
      created_at: at,
      answered_at: null
    })
  }`
const count = (sql: SqlClient.SqlClient, table: "agent_messages" | "agent_history") =>
  Effect.map(sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(table)}`, ([row]) => Number(row.n))

/** The store at `url`, migrated, with the retention service (its background pass far away unless `every` says). */
const withRetention = <A, E>(
  url: Effect.Effect<string, never, Scope.Scope>,
  body: (sql: SqlClient.SqlClient, retention: RecordRetention["Type"]) => Effect.Effect<A, E>,
  options: { readonly settings?: RecordRetentionSettings; readonly every?: Duration.DurationInput } = {}
) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      RecordRetentionLive(options.settings ?? SETTINGS, { every: options.every ?? "1 hour" }).pipe(
        Layer.provideMerge(DatabaseLive(yield* url))
      )
    )
    return yield* body(Context.get(context, SqlClient.SqlClient), Context.get(context, RecordRetention))
  }).pipe(Effect.scoped)

const suite = (name: string, url: Effect.Effect<string, never, Scope.Scope>) => {
  it.live(`${name}: by age, finished executions go with their events and keys; running and suspended ones stay however old`, () =>
    withRetention(url, (sql, retention) =>
      Effect.gen(function*() {
        const old = ago(40 * DAY)
        yield* insertExecution(sql, { id: "old-completed", status: "completed", at: old, endedAt: old, key: true })
        yield* insertExecution(sql, { id: "old-error", status: "error", at: old, endedAt: old, key: true })
        yield* insertExecution(sql, { id: "old-cancelled", status: "cancelled", at: old, endedAt: old })
        yield* insertExecution(sql, {
          id: "recent-completed",
          status: "completed",
          at: ago(DAY),
          endedAt: ago(DAY),
          key: true
        })
        // Even with an old end time (which they never have), running and suspended rows are no candidates.
        yield* insertExecution(sql, { id: "old-running", status: "running", at: old, endedAt: old, key: true })
        yield* insertExecution(sql, { id: "old-suspended", status: "suspended", at: old, endedAt: null })

        const counts = yield* retention.pruneNow()
        expect(counts.executions).toBe(3)
        expect(yield* ids(sql)).toEqual(["old-running", "old-suspended", "recent-completed"])
        for (const gone of ["old-completed", "old-error", "old-cancelled"]) expect(yield* eventCount(sql, gone)).toBe(0)
        for (const kept of ["old-running", "old-suspended", "recent-completed"]) {
          expect(yield* eventCount(sql, kept)).toBe(3)
        }
        expect(yield* keyOwners(sql)).toEqual(["old-running", "recent-completed"])
        // A second pass finds nothing more.
        expect((yield* retention.pruneNow()).executions).toBe(0)
      })))

  it.live(`${name}: by count, the newest maxCount finished executions stay, deleted in batches`, () =>
    withRetention(url, (sql) =>
      Effect.gen(function*() {
        const base = Date.now() - DAY
        const at = (i: number) => new Date(base + i * 1000).toISOString()
        yield* sql.withTransaction(Effect.forEach(
          Array.from({ length: 260 }, (_, i) => i),
          (i) =>
            insertExecution(sql, {
              id: `done-${String(i).padStart(3, "0")}`,
              status: i % 7 === 0 ? "error" : "completed",
              at: at(i),
              endedAt: at(i),
              events: 2
            }),
          { discard: true }
        ))
        for (let i = 0; i < 5; i++) {
          yield* insertExecution(sql, { id: `run-${i}`, status: "running", at: at(i), endedAt: null })
          yield* insertExecution(sql, { id: `wait-${i}`, status: "suspended", at: at(i), endedAt: null })
        }
        const batches: Array<number> = []
        const counted: Prunable = {
          ...finishedExecutions,
          remove: (s, batch) => (batches.push(batch.length), finishedExecutions.remove(s, batch))
        }

        const deleted = yield* prune(sql, counted, { maxCount: 100, maxAgeMs: 30 * DAY }, { batchSize: 50 })
        expect(deleted).toBe(160)
        expect(batches).toEqual([50, 50, 50, 10])
        const left = yield* ids(sql)
        expect(left.filter((id) => id.startsWith("done-"))).toEqual(
          Array.from({ length: 100 }, (_, i) => `done-${String(160 + i).padStart(3, "0")}`)
        )
        expect(left.filter((id) => !id.startsWith("done-"))).toHaveLength(10)
        const [events] = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM workflow_events`
        expect(Number(events.n)).toBe(100 * 2 + 10 * 3)
      })))

  it.live(`${name}: conversation messages and history entries by age, then by count`, () =>
    withRetention(url, (sql, retention) =>
      Effect.gen(function*() {
        for (let i = 0; i < 5; i++) yield* insertMessage(sql, "old", ago(100 * DAY - i * 1000))
        const recent = Array.from({ length: 5 }, (_, i) => ago(DAY - i * 1000))
        for (const at of recent) yield* insertMessage(sql, "recent", at)
        yield* insertHistory(sql, "h-old-1", "old", ago(100 * DAY))
        yield* insertHistory(sql, "h-old-2", "old", ago(95 * DAY))
        yield* insertHistory(sql, "h-new-1", "recent", ago(2 * DAY))
        yield* insertHistory(sql, "h-new-2", "recent", ago(DAY))

        // Working memory records (per user: nothing else deletes them) age out by their last update.
        yield* insertWorkingMemory(sql, "user", "u-old", ago(100 * DAY))
        yield* insertWorkingMemory(sql, "user", "u-recent", ago(DAY))
        yield* insertWorkingMemory(sql, "conversation", "old", ago(100 * DAY))

        expect(yield* retention.pruneNow()).toEqual({
          executions: 0,
          messages: 5,
          historyEntries: 2,
          workingMemory: 2,
          approvals: 0
        })
        const records = yield* sql<{ key: string }>`SELECT key FROM agent_working_memory`
        expect(records.map((row) => row.key)).toEqual(["u-recent"])
        const conversations = yield* sql<
          { conversation_id: string }
        >`SELECT DISTINCT conversation_id FROM agent_messages`
        expect(conversations.map((row) => row.conversation_id)).toEqual(["recent"])

        const limit = { maxCount: 3, maxAgeMs: 90 * DAY }
        expect(yield* prune(sql, finishedExecutions, limit)).toBe(0)
        expect(yield* prune(sql, conversationMessages, limit)).toBe(2)
        expect(yield* prune(sql, historyEntries, limit)).toBe(0)
        expect(yield* count(sql, "agent_messages")).toBe(3)
        const kept = yield* sql<{ created_at: string }>`SELECT created_at FROM agent_messages ORDER BY created_at`
        expect(kept.map((row) => row.created_at)).toEqual(recent.slice(2))
      })))

  it.live(`${name}: tool approval rows, pending or answered, age out with the conversations' retention`, () =>
    withRetention(url, (sql, retention) =>
      Effect.gen(function*() {
        yield* insertApproval(sql, "old-pending", "pending", ago(100 * DAY))
        yield* insertApproval(sql, "old-approved", "approved", ago(95 * DAY))
        yield* insertApproval(sql, "recent-pending", "pending", ago(DAY))
        expect((yield* retention.pruneNow()).approvals).toBe(2)
        const left = yield* sql<{ id: string }>`SELECT id FROM agent_tool_approvals`
        expect(left.map((row) => row.id)).toEqual(["recent-pending"])
      })))

  it.live(
    `${name}: the background pass applies the retention by itself`,
    () =>
      withRetention(url, (sql) =>
        Effect.gen(function*() {
          const old = ago(40 * DAY)
          yield* insertExecution(sql, { id: "old-completed", status: "completed", at: old, endedAt: old })
          yield* insertExecution(sql, { id: "old-suspended", status: "suspended", at: old, endedAt: null })
          yield* insertMessage(sql, "old", ago(100 * DAY))
          const deadline = Date.now() + 20_000
          while ((yield* ids(sql)).length > 1 || (yield* count(sql, "agent_messages")) > 0) {
            if (Date.now() > deadline) throw new Error("the background pass did not prune within 20 s")
            yield* Effect.sleep("50 millis")
          }
          expect(yield* ids(sql)).toEqual(["old-suspended"])
        }), { every: "100 millis" }),
    30_000
  )

  it.live(
    `${name}: each background pass measures ages from its own time, so a record that ages out after start-up goes too`,
    () =>
      withRetention(url, (sql) =>
        Effect.gen(function*() {
          // Finished after the service started: only a pass that reads the clock again can find it old.
          yield* insertExecution(sql, { id: "just-completed", status: "completed", at: ago(0), endedAt: ago(0) })
          const deadline = Date.now() + 20_000
          while ((yield* ids(sql)).length > 0) {
            if (Date.now() > deadline) {
              throw new Error("no background pass pruned the execution within 20 s of its ageing out")
            }
            yield* Effect.sleep("50 millis")
          }
        }), { every: "100 millis", settings: { ...SETTINGS, executions: { maxCount: undefined, maxAgeMs: 1_000 } } }),
    30_000
  )
}

describe("retention of executions and conversations", () => {
  describe("SQLite", () => {
    suite("SQLite", Effect.map(tempDir, (dir) => `file:${join(dir, "retention.db")}`))
  })
  describe.skipIf(!postgresAvailable)("Postgres", () => {
    suite("Postgres", freshPostgresDatabase)
  })
})
