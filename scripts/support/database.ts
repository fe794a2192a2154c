/**
 * The databases the load scripts run the service on, and what they read back from them directly
 * (what the HTTP API cannot show: the stored event rows themselves).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, type Layer, Redacted } from "effect"

export const DEFAULT_POSTGRES_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"

const isPostgres = (url: string) => /^postgres(ql)?:\/\//.test(url)

const clientFor = (url: string): Layer.Layer<SqlClient.SqlClient, unknown> =>
  isPostgres(url)
    ? PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
    : SqliteClient.layer({ filename: url.replace(/^file:(\/\/)?/, ""), readonly: true })

const withClient = <A>(url: string, use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, use).pipe(Effect.provide(clientFor(url)))))

/** A new, empty Postgres database next to `adminUrl`'s; resolves to its URL and a function that drops it. */
export const createPostgresDatabase = async (adminUrl: string) => {
  const name = `svc_load_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await withClient(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () =>
      withClient(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined)
  }
}

export interface StoredRows {
  readonly executions: ReadonlyArray<{ readonly id: string; readonly status: string }>
  /** Every event row's sequence number, per execution, in stored order (by seq). */
  readonly seqs: ReadonlyMap<string, ReadonlyArray<number>>
  /** `execution path` of each inner step (item, iteration, branch) whose step-complete is stored more than once. */
  readonly innerCompletedTwice: ReadonlyArray<string>
}

/** Reads the execution and event tables (SQLite opened read-only). */
export const readStoredRows = (databaseUrl: string): Promise<StoredRows> =>
  withClient(databaseUrl, (sql) =>
    Effect.gen(function*() {
      const executions = yield* sql<{ id: string; status: string }>`SELECT id, status FROM workflow_executions`
      const events = yield* sql<
        { execution_id: string; seq: number }
      >`SELECT execution_id, seq FROM workflow_events ORDER BY execution_id, seq`
      const seqs = new Map<string, Array<number>>()
      for (const row of events) {
        const list = seqs.get(row.execution_id) ?? []
        list.push(Number(row.seq))
        seqs.set(row.execution_id, list)
      }
      const twice = yield* sql<{ execution_id: string; path: string }>`SELECT execution_id, path FROM workflow_events
        WHERE path IS NOT NULL AND event LIKE ${"%\"type\":\"step-complete\"%"} GROUP BY execution_id, path HAVING COUNT(*) > 1`
      return {
        executions: executions.map((row) => ({ id: row.id, status: row.status })),
        seqs,
        innerCompletedTwice: twice.map((row) => `${row.execution_id} ${row.path}`)
      }
    }))

/**
 * Ends every connection to the Postgres database at `url` but the one asking, as a failover or a
 * pooler restart does (`pg_terminate_backend`); resolves to how many it ended.
 */
export const resetConnections = (url: string): Promise<number> =>
  withClient(url, (sql) =>
    Effect.map(
      sql.unsafe(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
      ),
      (rows) => rows.length
    ))

/** A committed event as the oracle of scripts/support/recorded.ts reads it. */
export interface CommittedEvent {
  readonly executionId: string
  readonly type: string
  /** The inner step's path, or the top-level step's id. */
  readonly path: string
  readonly topLevel: boolean
  /** The timestamp the engine wrote (its process clock), before the commit. */
  readonly time: number
  readonly attempt?: number
  readonly wakeAt?: number
}

/** The step-complete, step-retry and step-sleep rows of the executions of `workflowIds`. */
export const readStepEvents = (
  databaseUrl: string,
  workflowIds: ReadonlyArray<string>
): Promise<ReadonlyArray<CommittedEvent>> =>
  withClient(databaseUrl, (sql) =>
    Effect.map(
      sql<
        { execution_id: string; path: string | null; event: string }
      >`SELECT e.execution_id, e.path, e.event FROM workflow_events e
        JOIN workflow_executions x ON x.id = e.execution_id WHERE x.workflow_id IN ${sql.in(workflowIds)}
        AND (e.event LIKE ${"%\"type\":\"step-complete\"%"} OR e.event LIKE ${"%\"type\":\"step-retry\"%"} OR e.event LIKE ${"%\"type\":\"step-sleep\"%"})`,
      (rows) =>
        rows.map((row) => {
          const event = JSON.parse(row.event) as {
            type: string
            from: string
            timestamp: string
            attempt?: number
            wakeAt?: string
          }
          return {
            executionId: row.execution_id,
            type: event.type,
            path: row.path ?? event.from,
            topLevel: row.path === null,
            time: Date.parse(event.timestamp),
            ...(event.attempt === undefined ? {} : { attempt: event.attempt }),
            ...(event.wakeAt === undefined ? {} : { wakeAt: Date.parse(event.wakeAt) })
          }
        })
    ))
