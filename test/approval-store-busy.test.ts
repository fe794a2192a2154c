import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createRequire } from "node:module"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { ApprovalStore, ApprovalStoreLive } from "../src/agents/approvals/ApprovalStore.js"
import { DatabaseLive } from "../src/Database.js"
import { tempDir } from "./support/TestServer.js"

// Issue #32: an approval's answer reads its rows, then writes them, in one SQLite transaction. Another
// connection to the file (the service's writer thread, committing history) may commit between the two:
// SQLite then refuses the write at once (SQLITE_BUSY_SNAPSHOT, no busy wait), which was a 500 in one of
// 200 race trials under load. Here a thread commits through its own connection as fast as it can;
// the store's transaction now takes the write lock first, and waits for it.

const ANSWERS = 100

const betterSqlite = createRequire(import.meta.url).resolve("better-sqlite3")

/** A thread committing one-row transactions to `file` until stopped; `stop` gives how many it committed. */
const otherWriter = (file: string) => {
  const flags = new Int32Array(new SharedArrayBuffer(8))
  const worker = new Worker(
    `const { workerData } = require("node:worker_threads")
    const db = new (require(workerData.betterSqlite))(workerData.file)
    db.pragma("busy_timeout = 5000")
    db.exec("CREATE TABLE IF NOT EXISTS other_writer (n INTEGER)")
    db.pragma("busy_timeout = 0")
    while (Atomics.load(workerData.flags, 0) === 0) {
      try { db.exec("BEGIN IMMEDIATE; INSERT INTO other_writer VALUES (1); COMMIT"); Atomics.add(workerData.flags, 1, 1) }
      catch { if (db.inTransaction) db.exec("ROLLBACK") }
    }
    db.close()`,
    { eval: true, workerData: { betterSqlite, file, flags } }
  )
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()))
  return {
    commits: () => Atomics.load(flags, 1),
    stop: async () => {
      Atomics.store(flags, 0, 1)
      await exited
      return Atomics.load(flags, 1)
    }
  }
}

describe("ApprovalStore on SQLite beside another writer", () => {
  it.scopedLive(
    "answers succeed while another connection commits between their statements",
    () =>
      Effect.gen(function*() {
        const file = join(yield* tempDir, "approvals.db")
        const answered = yield* Effect.gen(function*() {
          const store = yield* ApprovalStore
          for (let i = 0; i < ANSWERS; i++) {
            yield* store.request({
              agentId: "cashier",
              callId: `call-${i}`,
              owner: undefined,
              conversationId: undefined,
              requests: [{
                approvalId: `approval-${i}`,
                toolName: "refund",
                toolCallId: `tool-call-${i}`,
                input: { amount: i }
              }],
              state: {},
              expiresAt: new Date(Date.now() + 60_000)
            })
          }
          const writer = otherWriter(file)
          // The thread is writing before the first answer (its start-up takes a while on a loaded host).
          yield* Effect.sleep("5 millis").pipe(
            Effect.repeat({ until: () => writer.commits() > 0 }),
            Effect.timeout("30 seconds")
          )
          const before = writer.commits()
          const results = yield* Effect.forEach(
            Array.from({ length: ANSWERS }, (_, i) => i),
            (i) => Effect.either(store.answer("cashier", [{ approvalId: `approval-${i}`, approved: true }], undefined)),
            { concurrency: 4 }
          ).pipe(Effect.sandbox, Effect.either, Effect.ensuring(Effect.promise(writer.stop)))
          expect(yield* Effect.promise(writer.stop)).toBeGreaterThan(before)
          return results
        }).pipe(Effect.provide(ApprovalStoreLive.pipe(Layer.provide(DatabaseLive(`file:${file}`)))))
        expect(answered._tag, "no answer died (a SqlError is a defect, a 500)").toBe("Right")
        if (answered._tag === "Right") {
          expect(answered.right.filter((one) => one._tag === "Right")).toHaveLength(ANSWERS)
        }
      }),
    60_000
  )
})
