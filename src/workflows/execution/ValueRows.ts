import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import type { CommitRequest, ResultRow } from "../../storage/commits.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import { Resolved } from "./ExecutionRows.js"
import { externalize, type Externalized, hasReferences, parseStored, referencesIn, revive } from "./StoredValues.js"

/** The stored values of executions (StoredValues) as the store writes and reads them. */

const TABLE = "workflow_values"
/** Hashes per lookup: far under either dialect's cap on parameters. */
const HASHES_PER_READ = 500

/** Parts of one write whose storage is checked one by one (issue #42); past that, each counts as new. */
const CHECKED_VALUES = 100

/** What one write stores: the texts of its values, and the parts they refer to, each once. */
export const makeStaging = () => {
  const values = new Map<string, string>()
  let bytes = 0
  /** The bytes of the event and step-output texts staged (issue #42: what the execution stores, not what a reader receives). */
  let appended = 0
  const stored = (value: unknown) => {
    const externalized = externalize(value)
    for (const [hash, text] of externalized.values) values.set(hash, text)
    return externalized
  }
  return {
    /** The text of a column. */
    text: (value: unknown): string => stored(value).text,
    /** The text of an event and its size as JSON read back, counted in the history's bytes. */
    event: (event: unknown): Externalized => {
      const externalized = stored(event)
      bytes += externalized.bytes
      appended += Buffer.byteLength(externalized.text)
      return externalized
    },
    /** The text of an inner step's output row, counted in the execution's stored bytes. */
    output: (value: unknown): string => {
      const text = stored(value).text
      appended += Buffer.byteLength(text)
      return text
    },
    /** The size of the events staged so far, as JSON. */
    historyBytes: () => bytes,
    /** What the write adds to the execution's stored bytes when it stores every part staged (a new execution's). */
    storedBytes: () => Array.from(values.values()).reduce((sum, text) => sum + Buffer.byteLength(text), appended),
    /**
     * The SET of an UPDATE of the execution `id`'s row that counts the write: its events' size in
     * `history_bytes`, and in `stored_bytes` its texts and the staged parts the execution does not
     * store yet (a part is stored once: settled 7 of issue #42). Put last, once every text is staged.
     */
    counted: (sql: SqlClient.SqlClient, id: string): Statement.Fragment => {
      const parts = Array.from(values, ([hash, text]) => ({ hash, bytes: Buffer.byteLength(text) }))
      const checked = parts.length <= CHECKED_VALUES ? parts : []
      const unchecked = parts.length <= CHECKED_VALUES ? 0 : parts.reduce((sum, part) => sum + part.bytes, 0)
      const unseen = checked.map((part) =>
        sql`CASE WHEN EXISTS (SELECT 1 FROM ${
          sql(TABLE)
        } WHERE execution_id = ${id} AND hash = ${part.hash}) THEN 0 ELSE ${part.bytes} END`
      )
      return sql`history_bytes = history_bytes + ${bytes}, stored_bytes = stored_bytes + ${appended + unchecked}${
        unseen.length === 0 ? sql`` : sql` + ${sql.join(" + ", false)(unseen)}`
      }`
    },
    /** The parts to insert with the write, under the execution `id`. */
    once: (id: string): CommitRequest["once"] =>
      values.size === 0
        ? undefined
        : { table: TABLE, rows: Array.from(values, ([hash, value]) => ({ execution_id: id, hash, value })) }
  }
}

type Staging = ReturnType<typeof makeStaging>

/**
 * A conditional write with its events, in one request: the `statements` built on the write's staging
 * (the first bumps the execution row's `last_seq` by the number of events; the last answers it), then
 * the events appended with their numbers (and `path`) and the values staged. The number of the last
 * event, or none when the condition did not hold.
 */
export const writeWithEvents = <E>(
  submit: (request: CommitRequest) => Effect.Effect<ReadonlyArray<ResultRow>, E>,
  id: string,
  events: ReadonlyArray<WorkflowEvent>,
  statements: (staging: Staging) => ReadonlyArray<Statement.Statement<unknown>>
): Effect.Effect<Option.Option<number>, E> =>
  Effect.map(writeAnswering(submit, id, events, statements), Option.map((row) => Number(row.last_seq)))

/** writeWithEvents answering the row the last statement returned (its `last_seq` and what else it selects). */
export const writeAnswering = <E>(
  submit: (request: CommitRequest) => Effect.Effect<ReadonlyArray<ResultRow>, E>,
  id: string,
  events: ReadonlyArray<WorkflowEvent>,
  statements: (staging: Staging) => ReadonlyArray<Statement.Statement<unknown>>
): Effect.Effect<Option.Option<ResultRow>, E> => {
  const staging = makeStaging()
  const rows = events.map((event) => {
    const { bytes, text } = staging.event(event)
    return { execution_id: id, event: text, bytes, created_at: event.timestamp, path: event.path ?? null }
  })
  return Effect.map(
    submit({
      statements: statements(staging).map((statement) => statement.compile()),
      append: { table: "workflow_events", numberColumn: "seq", numberFrom: "last_seq", rows },
      once: staging.once(id)
    }),
    (changed) => Option.fromNullable(changed[0])
  )
}

/**
 * `rows` with each text of `columns` that refers to stored values replaced by the value, read back
 * whole (a `Resolved`); the others as they are. `idOf`: the execution a row belongs to. A part
 * referred to many times is read, and held, once.
 */
export const resolveRows = <Row extends Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<Row>,
  columns: ReadonlyArray<string>,
  idOf: (row: Row) => string
) =>
  Effect.gen(function*() {
    const cells: Array<{ readonly at: number; readonly column: string; readonly parsed: unknown }> = []
    const wanted = new Map<string, Set<string>>()
    rows.forEach((row, at) => {
      for (const column of columns) {
        const text = row[column]
        if (typeof text !== "string" || !hasReferences(text)) continue
        const parsed = parseStored(text)
        cells.push({ at, column, parsed })
        const id = idOf(row)
        wanted.set(id, referencesIn(parsed, wanted.get(id)))
      }
    })
    if (cells.length === 0) return rows
    const found = new Map<string, Map<string, unknown>>()
    for (const [id, hashes] of wanted) {
      const values = new Map<string, unknown>()
      found.set(id, values)
      let missing = Array.from(hashes)
      while (missing.length > 0) {
        const next = new Set<string>()
        for (let at = 0; at < missing.length; at += HASHES_PER_READ) {
          const read = yield* sql<{ hash: string; value: string }>`SELECT hash, value FROM ${sql(TABLE)}
            WHERE execution_id = ${id} AND ${sql.in("hash", missing.slice(at, at + HASHES_PER_READ))}`
          for (const { hash, value } of read) {
            const parsed: unknown = JSON.parse(value)
            values.set(hash, parsed)
            for (const inner of referencesIn(parsed)) if (!values.has(inner)) next.add(inner)
          }
        }
        missing = Array.from(next)
      }
    }
    const resolved = rows.slice()
    for (const { at, column, parsed } of cells) {
      resolved[at] = { ...resolved[at], [column]: new Resolved(revive(parsed, found.get(idOf(rows[at]))!)) }
    }
    return resolved
  })
