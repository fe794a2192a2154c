import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { allExit, makeBatching } from "./batching.js"
import {
  type Commit,
  type CommitOutcome,
  type CommitRequest,
  commitRequestsOn,
  makeCommit,
  type ResultRow
} from "./commits.js"
import { type DatabaseUrl, sqliteFile } from "./Sql.js"
import { workerScript } from "./workerScript.js"
import { type SpawnThread, threadRequests } from "./workerThread.js"

export type { CommitRequest, CompiledStatement, NumberedRows, ResultRow } from "./commits.js"

/**
 * Commits the stores' writes (commits.ts): group-committed, each answering once its transaction has.
 * On a SQLite file a worker thread with its own connection runs them: better-sqlite3 is synchronous,
 * and every commit's fsync (`synchronous = FULL`) held the event loop. Elsewhere (Postgres, whose
 * driver is asynchronous; an in-memory SQLite no other connection can open) the service's own client
 * does. A write that fails is a defect for its caller, as any failing SQL of the stores is.
 */
export class StoreCommits extends Context.Tag("StoreCommits")<StoreCommits, {
  readonly commit: (request: CommitRequest) => Effect.Effect<ReadonlyArray<ResultRow>>
}>() {}

// The writer's statements are not traced (the batching fiber runs them with tracing off, batching.ts):
// the callers' spans cover their writes. A caller only queues its request and waits, so it needs no
// scope of its own with tracing off (one FiberRef scope per commit, eight per pipeline execution).
const asDefect = (commit: Commit) => (request: CommitRequest) => Effect.orDie(commit(request))

const WORKER_FILE = "commitWorker.js"
/**
 * Requests go to the thread in batches (those submitted while the previous batch was being
 * committed, and those of the current turn of the event loop): one message, and one transaction, for
 * each batch. A batch of one, what a lightly loaded service makes, is committed on the service's own
 * connection instead: the two hops between threads cost it more latency than its fsync costs the
 * event loop. Batches are committed one at a time, so the two connections never wait on each other.
 */
const threadCommit = (sql: SqlClient.SqlClient, script: string, filename: string, spawn?: SpawnThread) =>
  Effect.gen(function*() {
    const send = yield* threadRequests<ReadonlyArray<CommitRequest>, ReadonlyArray<CommitOutcome>>(
      script,
      filename,
      spawn
    )
    const inline = commitRequestsOn(sql)
    const commit = (batch: ReadonlyArray<CommitRequest>) =>
      batch.length === 1 ? inline(batch) : send(batch).pipe(
        Effect.map((outcomes) =>
          outcomes.map((outcome) => "rows" in outcome ? Exit.succeed(outcome.rows) : Exit.fail(outcome.error))
        ),
        // The thread died or could not be reached: nothing is known about the batch's outcome.
        Effect.catchAllCause((cause) => Effect.succeed(allExit(batch.length, Exit.failCause(cause))))
      )
    return yield* makeBatching<CommitRequest>(commit)
  })

export const StoreCommitsLive = (databaseUrl: DatabaseUrl, options: { readonly spawn?: SpawnThread } = {}) =>
  Layer.scoped(
    StoreCommits,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const filename = sqliteFile(databaseUrl)
      const script = filename === undefined ? undefined : workerScript(import.meta.url, "storage", WORKER_FILE)
      if (filename !== undefined && script === undefined) {
        yield* Effect.logWarning(`${WORKER_FILE} not found: the stores' writes are committed on the main thread`)
      }
      const commit: Commit = filename !== undefined && script !== undefined
        ? yield* threadCommit(sql, script, filename, options.spawn)
        : yield* makeCommit(sql)
      return StoreCommits.of({ commit: asDefect(commit) })
    })
  )

/**
 * `statements` committed together as one request (compiled by the client that built them): the rows
 * the last one returned, typed as its rows.
 */
export const committingStatements = (commit: StoreCommits["Type"]["commit"]) =>
<A extends object>(
  ...statements: [...ReadonlyArray<Statement.Statement<any>>, Statement.Statement<A>]
): Effect.Effect<ReadonlyArray<A>> =>
  commit({ statements: statements.map((statement) => statement.compile()) }) as Effect.Effect<ReadonlyArray<A>>

/** The commits the layer provides, or the service's own client's when no layer does (a store used alone). */
export const storeCommitsOrInline = Effect.flatMap(
  Effect.serviceOption(StoreCommits),
  Option.match({
    onSome: (commits) => Effect.succeed(commits.commit),
    onNone: () => Effect.map(Effect.flatMap(SqlClient.SqlClient, makeCommit), asDefect)
  })
)
