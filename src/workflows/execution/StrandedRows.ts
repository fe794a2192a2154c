import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { NumberColumn } from "../../storage/ColumnSchemas.js"

/** Rows looked at per check. */
const CHECK_LIMIT = 500

const Held = Schema.Struct({ id: Schema.String, version: NumberColumn })

/**
 * Executions the store says `owner` runs that it wrote nothing to since `before` (ISO, by the owner's
 * clock, which wrote `updated_at`): the supervisor keeps those it holds no fiber for. A claim whose
 * COMMIT went through while its answer was lost (a connection reset during the reply) leaves such a
 * row: an admission, a wake, a resume or an orphan claim that the claimer never launched.
 */
export const makeStrandedRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const decode = Schema.decodeUnknown(Schema.Array(Held))
  return (owner: string, before: string) =>
    sql`SELECT id, version FROM workflow_executions WHERE status = 'running' AND owner = ${owner} AND updated_at < ${before}
      ORDER BY updated_at LIMIT ${CHECK_LIMIT}`.pipe(
      Effect.flatMap(decode),
      Effect.orDie,
      Effect.withTracerEnabled(false)
    )
})
