import type { SqlClient } from "@effect/sql"
import { Effect, type Scope } from "effect"
import { makeBatching } from "./batching.js"
import { makeTransactionBatches } from "./GroupCommit.js"

/** A statement compiled by the service's SQL client: its text and parameters (plain data). */
export type CompiledStatement = readonly [sql: string, params: ReadonlyArray<unknown>]

export type ResultRow = Readonly<Record<string, unknown>>

/**
 * Rows appended when the last statement of a commit returned a row, numbered so that the last of them
 * carries the number that row holds (`numberFrom`), in `numberColumn`: a conditional UPDATE that bumps
 * a counter by `rows.length` and returns it, and the rows it numbers, written together or not at all.
 */
export interface NumberedRows {
  readonly table: string
  readonly numberColumn: string
  readonly numberFrom: string
  readonly rows: ReadonlyArray<Readonly<Record<string, string | number | null>>>
}

/**
 * One write, as data (so that it can cross to a writer thread): statements run in order in one
 * transaction, shared with the writes submitted at about the same moment (a group commit). It answers
 * with the rows the last statement returned, once that transaction has committed.
 */
export interface CommitRequest {
  readonly statements: ReadonlyArray<CompiledStatement>
  readonly append?: NumberedRows | undefined
  /**
   * Rows inserted with the appended ones (when the last statement returned a row), a row whose key
   * is already there left out (`ON CONFLICT DO NOTHING`): values stored once, whoever writes them first.
   */
  readonly once?: {
    readonly table: string
    readonly rows: ReadonlyArray<Readonly<Record<string, string | number | null>>>
  } | undefined
}

export type Commit = (request: CommitRequest) => Effect.Effect<ReadonlyArray<ResultRow>, unknown>

/** What a write's transaction answers its caller: the rows, or why it failed (as text: it may cross threads). */
export type CommitOutcome = { readonly rows: ReadonlyArray<ResultRow> } | { readonly error: string }

export interface StagedRow {
  readonly table: string
  readonly row: Readonly<Record<string, string | number | null>>
  /** A row whose key is already there is left out. */
  readonly once?: boolean
}

/** The rows a request appends, given the rows its last statement returned (none when it returned none). */
export const appendedRows = (request: CommitRequest, returned: ReadonlyArray<ResultRow>): ReadonlyArray<StagedRow> => {
  const { append, once } = request
  if (returned.length === 0) return []
  const values = once === undefined ? [] : once.rows.map((row) => ({ table: once.table, row, once: true }))
  if (append === undefined || append.rows.length === 0) return values
  const first = Number(returned[0][append.numberFrom]) - append.rows.length + 1
  return [
    ...values,
    ...append.rows.map((row, i) => ({ table: append.table, row: { ...row, [append.numberColumn]: first + i } }))
  ]
}

/** The tables whose staged rows are inserted once (ON CONFLICT DO NOTHING). */
export const onceTables = (staged: ReadonlyArray<StagedRow>): ReadonlySet<string> =>
  new Set(staged.flatMap((staged) => (staged.once === true ? [staged.table] : [])))

/** Staged rows by table, in the order they were staged. */
export const byTable = (staged: ReadonlyArray<StagedRow>): Map<string, Array<StagedRow["row"]>> => {
  const tables = new Map<string, Array<StagedRow["row"]>>()
  for (const { row, table } of staged) {
    const rows = tables.get(table)
    if (rows === undefined) tables.set(table, [row])
    else rows.push(row)
  }
  return tables
}

/** Parameters per INSERT at most: far under SQLite's (32,766) and Postgres's (65,535) caps. */
const MAX_PARAMETERS = 8_000

/** Rows per INSERT of a table with `columns` columns. */
export const rowsPerInsert = (columns: number) => Math.max(1, Math.floor(MAX_PARAMETERS / columns))

/** The appended rows of every write of a transaction, one INSERT per table (and per MAX_PARAMETERS). */
const insertStaged = (sql: SqlClient.SqlClient) => (staged: ReadonlyArray<StagedRow>) =>
  Effect.gen(function*() {
    const once = onceTables(staged)
    for (const [table, rows] of byTable(staged)) {
      const size = rowsPerInsert(Object.keys(rows[0]).length)
      for (let at = 0; at < rows.length; at += size) {
        yield* sql`INSERT INTO ${sql(table)} ${sql.insert(rows.slice(at, at + size))}${
          once.has(table) ? sql` ON CONFLICT DO NOTHING` : sql``
        }`
      }
    }
  })

/**
 * One request run on `sql` as it stands (inside the caller's transaction, not group-committed): for a
 * write that must share a transaction with another store's conditional write.
 */
export const runRequestOn = (sql: SqlClient.SqlClient) => (request: CommitRequest) =>
  Effect.gen(function*() {
    let rows: ReadonlyArray<ResultRow> = []
    for (const [text, params] of request.statements) rows = yield* sql.unsafe<ResultRow>(text, params)
    yield* insertStaged(sql)(appendedRows(request, rows))
    return rows
  })

/** A batch of commit requests in one transaction on `sql` (GroupCommit's semantics), each request's exit. */
export const commitRequestsOn = (sql: SqlClient.SqlClient) => {
  const group = makeTransactionBatches<StagedRow>(sql, insertStaged(sql))
  const run = (request: CommitRequest) =>
    Effect.gen(function*() {
      let rows: ReadonlyArray<ResultRow> = []
      for (const [text, params] of request.statements) rows = yield* sql.unsafe<ResultRow>(text, params)
      group.stage(appendedRows(request, rows))
      return rows
    })
  return (batch: ReadonlyArray<CommitRequest>) => {
    const [only] = batch
    // One statement alone is its own transaction: no BEGIN and COMMIT around it.
    return batch.length === 1 && only.statements.length === 1 && only.append === undefined && only.once === undefined
      ? Effect.map(Effect.exit(sql.unsafe<ResultRow>(...only.statements[0])), (exit) => [exit])
      : group.commit(batch.map(run))
  }
}

/** Commit requests group-committed on the service's own client (Postgres, an in-memory SQLite). */
export const makeCommit = (sql: SqlClient.SqlClient): Effect.Effect<Commit, never, Scope.Scope> =>
  makeBatching<CommitRequest>(commitRequestsOn(sql))
