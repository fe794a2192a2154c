import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { DatabaseLive } from "../src/Database.js"
import { type CommitRequest, StoreCommits, StoreCommitsLive } from "../src/storage/StoreCommits.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"
import { expectingThreadDeath } from "./support/threadDeaths.js"

/**
 * The stores' commits (src/storage/StoreCommits.ts): on a SQLite file a writer thread commits their
 * batches (a batch of one goes to the service's own connection), on Postgres the service's client does; either way a commit answers once it is
 * durable, a failing write fails alone, and the rows a conditional write numbers are appended only
 * when it applied.
 */

const backends = [
  {
    name: "SQLite (the commit thread)",
    skip: false,
    url: Effect.map(tempDir, (dir) => `file:${join(dir, "commits.db")}`)
  },
  { name: "Postgres (the service's client)", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const setUp = (sql: SqlClient.SqlClient) =>
  Effect.all([
    sql`CREATE TABLE counters (id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL)`,
    sql`CREATE TABLE counted (owner TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (owner, seq))`
  ], { discard: true })

/** The commits on `databaseUrl`, the service's client, and the commit threads started. */
const commitsOn = (databaseUrl: string) =>
  Effect.gen(function*() {
    const threads: Array<Worker> = []
    const context = yield* Layer.build(
      StoreCommitsLive(databaseUrl, {
        spawn: (script, workerData) => {
          const thread = new Worker(script, { workerData })
          threads.push(thread)
          return thread
        }
      }).pipe(Layer.provideMerge(DatabaseLive(databaseUrl)))
    )
    return {
      commit: Context.get(context, StoreCommits).commit,
      sql: Context.get(context, SqlClient.SqlClient),
      threads
    }
  })

const compiled = (statement: { compile: () => readonly [string, ReadonlyArray<unknown>] }) => statement.compile()

/** Bumps the counter `id` by `bodies.length` when it is at `expected`, with one numbered row per body. */
const bump = (
  sql: SqlClient.SqlClient,
  id: string,
  expected: number,
  bodies: ReadonlyArray<string>
): CommitRequest => ({
  statements: [compiled(sql`UPDATE counters SET last_seq = last_seq + ${bodies.length}
    WHERE id = ${id} AND last_seq = ${expected} RETURNING last_seq`)],
  append: {
    table: "counted",
    numberColumn: "seq",
    numberFrom: "last_seq",
    rows: bodies.map((body) => ({ owner: id, body }))
  }
})

describe.each(backends)("store commits on $name", ({ skip, url }) => {
  it.scopedLive.skipIf(skip)(
    "numbers appended rows from the returned counter, only when the write applied; a failing write fails alone",
    () =>
      Effect.gen(function*() {
        const databaseUrl = yield* url
        const { commit, sql, threads } = yield* commitsOn(databaseUrl)
        yield* setUp(sql)
        yield* commit({ statements: [compiled(sql`INSERT INTO counters (id, last_seq) VALUES ('a', 0), ('b', 0)`)] })

        // Submitted together, so they share batches: the broken one (no such table) must not take the others down.
        const exits = yield* Effect.all([
          Effect.exit(commit(bump(sql, "a", 0, ["a1", "a2"]))),
          Effect.exit(commit({ statements: [compiled(sql`INSERT INTO missing_table (x) VALUES (1)`)] })),
          Effect.exit(commit(bump(sql, "b", 0, ["b1"]))),
          // Its condition does not hold (a is not at 5): it answers no rows and appends nothing.
          Effect.exit(commit(bump(sql, "a", 5, ["never"])))
        ], { concurrency: "unbounded" })
        expect(exits.map(Exit.isSuccess)).toEqual([true, false, true, true])
        expect(exits[0]).toEqual(Exit.succeed([{ last_seq: 2 }]))
        expect(exits[3]).toEqual(Exit.succeed([]))

        yield* commit(bump(sql, "a", 2, ["a3"]))
        const rows = yield* sql<
          { owner: string; seq: number; body: string }
        >`SELECT owner, seq, body FROM counted ORDER BY owner, seq`
        expect(rows.map((row) => [row.owner, Number(row.seq), row.body])).toEqual([["a", 1, "a1"], ["a", 2, "a2"], [
          "a",
          3,
          "a3"
        ], ["b", 1, "b1"]])
        expect(threads.length).toBe(databaseUrl.startsWith("file:") ? 1 : 0)
      })
  )

  it.scopedLive.skipIf(skip)(
    "many concurrent conditional writes on one counter: exactly one applies per expected value",
    () =>
      Effect.gen(function*() {
        const databaseUrl = yield* url
        const { commit, sql } = yield* commitsOn(databaseUrl)
        yield* setUp(sql)
        yield* commit({ statements: [compiled(sql`INSERT INTO counters (id, last_seq) VALUES ('c', 0)`)] })
        for (let round = 0; round < 25; round++) {
          const exits = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => commit(bump(sql, "c", round, [`r${round}-${i}`]))),
            { concurrency: "unbounded" }
          )
          expect(exits.filter((rows) => rows.length === 1)).toHaveLength(1)
        }
        const rows = yield* sql<{ seq: number }>`SELECT seq FROM counted WHERE owner = 'c' ORDER BY seq`
        expect(rows.map((row) => Number(row.seq))).toEqual(Array.from({ length: 25 }, (_, i) => i + 1))
      })
  )
})

describe("the commit thread", () => {
  it.scopedLive("dies: what it had fails or commits, a new thread takes over", () =>
    expectingThreadDeath(Effect.gen(function*() {
      const databaseUrl = `file:${join(yield* tempDir, "dies.db")}`
      const { commit, sql, threads } = yield* commitsOn(databaseUrl)
      yield* setUp(sql)
      // Two at a time, so that they go to the thread as one batch (a batch of one is committed on the service's connection).
      const insert = (id: string) =>
        Effect.all(
          [`${id}-1`, `${id}-2`].map((key) =>
            commit({ statements: [compiled(sql`INSERT INTO counters (id, last_seq) VALUES (${key}, 0)`)] })
          ),
          {
            concurrency: "unbounded",
            discard: true
          }
        )
      yield* insert("before")
      expect(threads).toHaveLength(1)
      yield* Effect.promise(() => threads[0].terminate())
      const during = yield* Effect.exit(insert("during").pipe(Effect.timeout("20 seconds")))
      yield* Effect.retry(insert("after"), { times: 20 })
      expect(threads.length).toBeGreaterThanOrEqual(2)
      const ids = (yield* sql<{ id: string }>`SELECT id FROM counters ORDER BY id`).map((row) => row.id)
      expect(ids).toEqual(expect.arrayContaining(["after-1", "after-2", "before-1", "before-2"]))
      if (Exit.isSuccess(during)) expect(ids).toEqual(expect.arrayContaining(["during-1", "during-2"]))
    })))

  it.scopedLive("boots off start-up's path without waiting for a request, once", () =>
    Effect.gen(function*() {
      const { threads } = yield* commitsOn(`file:${join(yield* tempDir, "boots.db")}`)
      // Not while the layer is built: start-up does not pay for it.
      expect(threads).toHaveLength(0)
      for (let poll = 0; poll < 200 && threads.length === 0; poll++) yield* Effect.sleep("100 millis")
      expect(threads).toHaveLength(1)
      yield* Effect.sleep("1500 millis")
      expect(threads).toHaveLength(1)
    }))
})
