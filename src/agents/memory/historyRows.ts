import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { column, NumberColumn } from "../../storage/ColumnSchemas.js"
import { HistoryEntry, ModelRef, Usage } from "../AgentsSchemas.js"

/** History rows as entries: one whole (`SELECT *`), or as a page shows it (input and output cut in SQL). */

/** A history page shows an input (as JSON) or an output whole up to this many bytes; past it, its start, flagged. */
export const HISTORY_CUT_BYTES = 8 * 1024

const rowFields = {
  id: HistoryEntry.fields.id,
  status: HistoryEntry.fields.status,
  conversationId: column(HistoryEntry.fields.conversationId, "conversation_id"),
  userId: column(HistoryEntry.fields.userId, "user_id"),
  startTime: column(Schema.String, "start_time"),
  endTime: column(Schema.String, "end_time"),
  // The model that answered is kept beside the usage, in its JSON (no column of its own).
  usage: Schema.NullOr(Schema.parseJson(Schema.Struct({ ...Usage.fields, model: Schema.optional(ModelRef) }))),
  toolCalls: column(Schema.parseJson(HistoryEntry.fields.toolCalls), "tool_calls")
}

/** A history entry from its row (`SELECT *`). */
const HistoryEntryFromRow = Schema.Struct({
  ...rowFields,
  input: Schema.parseJson(),
  output: HistoryEntry.fields.output
})

type RowFields = Schema.Struct.Type<typeof rowFields>

const withModel = <A extends RowFields>(entry: A): Omit<A, "usage"> & Pick<HistoryEntry, "usage" | "model"> => {
  if (entry.usage?.model === undefined) return entry
  const { model, ...usage } = entry.usage
  return { ...entry, usage, model }
}

/** A row as a page reads it (pageColumns). */
const PageRow = Schema.Struct({
  ...rowFields,
  inputStart: column(Schema.String, "input_start"),
  inputBytes: column(NumberColumn, "input_bytes"),
  outputStart: column(Schema.NullOr(Schema.String), "output_start"),
  outputBytes: column(Schema.NullOr(NumberColumn), "output_bytes")
})

export const decodePageRows = Schema.decodeUnknown(Schema.Array(PageRow))

export const decodeWholeEntries = Schema.decodeUnknown(Schema.Array(HistoryEntryFromRow))

export const wholeEntry = (row: typeof HistoryEntryFromRow.Type): HistoryEntry => withModel(row)

/**
 * What a page reads of each row: input and output cut to HISTORY_CUT_BYTES characters (at most four
 * bytes each, so never more than 32 KiB of a row, whatever it holds), with their whole size in bytes.
 */
export const pageColumns = (sql: SqlClient.SqlClient) => {
  const cut = sql.literal(String(HISTORY_CUT_BYTES))
  const bytes = (name: "input" | "output") =>
    sql.onDialectOrElse({
      pg: () => sql.literal(`octet_length(${name})`),
      orElse: () => sql.literal(`length(CAST(${name} AS BLOB))`)
    })
  return sql`id, status, conversation_id, user_id, start_time, end_time, usage, tool_calls,
    substr(input, 1, ${cut}) AS input_start, ${bytes("input")} AS input_bytes,
    substr(output, 1, ${cut}) AS output_start, ${bytes("output")} AS output_bytes`
}

/** The longest start of `text` within `max` bytes of UTF-8, never splitting a character. */
const startWithin = (text: string, max: number): string => {
  const bytes = Buffer.from(text)
  let end = Math.min(max, bytes.length)
  while (end > 0 && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.toString("utf8", 0, end)
}

/**
 * A page's entry: an input or output over HISTORY_CUT_BYTES is the start of its text (the input's JSON
 * text, as stored), and `truncated` gives their whole sizes. Rows stored before the input cap read the same.
 */
export const pageEntry = (row: typeof PageRow.Type): HistoryEntry => {
  const { inputBytes, inputStart, outputBytes, outputStart, ...fields } = row
  const inputCut = inputBytes > HISTORY_CUT_BYTES
  const outputCut = outputBytes !== null && outputBytes > HISTORY_CUT_BYTES
  const entry = withModel({
    ...fields,
    input: inputCut ? startWithin(inputStart, HISTORY_CUT_BYTES) : JSON.parse(inputStart) as unknown,
    output: outputCut ? startWithin(outputStart!, HISTORY_CUT_BYTES) : outputStart
  })
  if (!inputCut && !outputCut) return entry
  return {
    ...entry,
    truncated: { ...(inputCut ? { inputBytes } : {}), ...(outputCut ? { outputBytes } : {}), limit: HISTORY_CUT_BYTES }
  }
}
