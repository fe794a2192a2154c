import type { SqlClient, SqlError } from "@effect/sql"
import * as Effect from "effect/Effect"

type Primitive = string | number | boolean | null

/** The most rows one statement carries (14 columns each stays far below every driver's parameter limit). */
const MAX_ROWS = 128

/**
 * Writes many rows as a few multi-row INSERTs of fixed sizes (powers of two up to MAX_ROWS). A batch of
 * any size reuses the same handful of statement texts, so each is compiled and prepared once; a
 * statement per batch size made SQLite prepare a new statement of up to thousands of parameters for
 * almost every span batch, which cost several times the insert itself.
 */
export const makeBatchInsert = (
  sql: SqlClient.SqlClient,
  options: { readonly table: string; readonly columns: ReadonlyArray<string>; readonly onConflict: string }
) => {
  const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const width = options.columns.length
  const texts = new Map<number, string>()
  const textFor = (rows: number): string => {
    let text = texts.get(rows)
    if (text === undefined) {
      const tuples: Array<string> = []
      for (let row = 0; row < rows; row++) {
        const marks: Array<string> = []
        for (let column = 1; column <= width; column++) marks.push(isPg ? `$${row * width + column}` : "?")
        tuples.push(`(${marks.join(",")})`)
      }
      text = `INSERT INTO ${options.table} (${options.columns.join(",")}) VALUES ${
        tuples.join(",")
      } ${options.onConflict}`
      texts.set(rows, text)
    }
    return text
  }

  return (rows: ReadonlyArray<ReadonlyArray<Primitive>>): Effect.Effect<void, SqlError.SqlError> =>
    Effect.suspend(() => {
      const statements: Array<Effect.Effect<unknown, SqlError.SqlError>> = []
      let at = 0
      while (at < rows.length) {
        let size = MAX_ROWS
        while (size > rows.length - at) size >>= 1
        const params: Array<Primitive> = []
        for (let row = at; row < at + size; row++) params.push(...rows[row])
        statements.push(sql.unsafe(textFor(size), params))
        at += size
      }
      return Effect.all(statements, { discard: true })
    })
}
