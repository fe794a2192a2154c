import type Database from "better-sqlite3"
import { messageWithCause } from "../core/errorMessages.js"
import {
  appendedRows,
  byTable,
  type CommitOutcome,
  type CommitRequest,
  onceTables,
  type ResultRow,
  rowsPerInsert,
  type StagedRow
} from "./commits.js"

/** Prepared statements kept at most (their texts repeat: a handful per store operation). */
const MAX_PREPARED = 512

/**
 * The commit thread's side of commits.ts, on better-sqlite3 directly (synchronous, and a fraction of
 * the SQL layer's cost per statement on a thread that does nothing else): a batch of requests in one
 * transaction, with the semantics of GroupCommit.ts. A request whose statements fail fails alone: the
 * transaction is rolled back and every request of the batch runs again in its own. When the COMMIT
 * itself fails, its outcome is unknown: every request of the batch gets the failure.
 */
export const makeBatchCommitter = (db: Database.Database) => {
  const prepared = new Map<string, Database.Statement>()
  const statement = (text: string) => {
    let found = prepared.get(text)
    if (found === undefined) {
      if (prepared.size >= MAX_PREPARED) prepared.clear()
      found = db.prepare(text)
      prepared.set(text, found)
    }
    return found
  }
  const begin = db.prepare("BEGIN IMMEDIATE")
  const commit = db.prepare("COMMIT")
  const rollback = db.prepare("ROLLBACK")

  const run = (request: CommitRequest, staged: Array<StagedRow>): ReadonlyArray<ResultRow> => {
    let rows: ReadonlyArray<ResultRow> = []
    for (const [text, params] of request.statements) {
      const prepared = statement(text)
      if (prepared.reader) rows = prepared.all(...params) as ReadonlyArray<ResultRow>
      else {
        prepared.run(...params)
        rows = []
      }
    }
    for (const row of appendedRows(request, rows)) staged.push(row)
    return rows
  }

  const insertStaged = (staged: ReadonlyArray<StagedRow>) => {
    const once = onceTables(staged)
    for (const [table, rows] of byTable(staged)) {
      const columns = Object.keys(rows[0])
      const size = rowsPerInsert(columns.length)
      for (let at = 0; at < rows.length; at += size) {
        const chunk = rows.slice(at, at + size)
        const tuple = `(${columns.map(() => "?").join(",")})`
        const params: Array<unknown> = []
        for (const row of chunk) for (const column of columns) params.push(row[column])
        statement(
          `INSERT INTO ${table} (${columns.join(",")}) VALUES ${chunk.map(() => tuple).join(",")}${
            once.has(table) ? " ON CONFLICT DO NOTHING" : ""
          }`
        ).run(...params)
      }
    }
  }

  /** The requests in one transaction; throws when a request fails (the transaction is rolled back). */
  const together = (batch: ReadonlyArray<CommitRequest>): Array<CommitOutcome> => {
    const staged: Array<StagedRow> = []
    begin.run()
    try {
      const outcomes = batch.map((request) => ({ rows: run(request, staged) }))
      insertStaged(staged)
      return outcomes
    } catch (error) {
      rollback.run()
      throw error
    }
  }

  const committed = (outcomes: Array<CommitOutcome>): Array<CommitOutcome> => {
    try {
      commit.run()
      return outcomes
    } catch (error) {
      if (db.inTransaction) rollback.run()
      return outcomes.map(() => ({ error: messageWithCause(error) }))
    }
  }

  return (batch: ReadonlyArray<CommitRequest>): Array<CommitOutcome> => {
    let outcomes: Array<CommitOutcome>
    try {
      outcomes = together(batch)
    } catch (error) {
      if (batch.length === 1) return [{ error: messageWithCause(error) }]
      return batch.map((request) => {
        try {
          return committed(together([request]))[0]
        } catch (failure) {
          return { error: messageWithCause(failure) }
        }
      })
    }
    return committed(outcomes)
  }
}
