import { type SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { type Replay, ReplayFromRow } from "./ExecutionRows.js"

/** How many replays of one execution its record lists (the newest): a client may start any number. */
export const MAX_REPLAYS_SHOWN = 100

const Request = Schema.Struct({
  ids: Schema.Array(Schema.String),
  userId: Schema.optional(Schema.NullOr(Schema.String))
})

/**
 * The replays of each of these executions (issue #33, migration 0027's index), newest first, at most
 * MAX_REPLAYS_SHOWN each; only `userId`'s (null: those without one) when given.
 */
export const findReplays = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>, userId?: string | null) => {
  if (ids.length === 0) {
    return Effect.succeed(new Map<string, ReadonlyArray<Replay>>() as ReadonlyMap<string, ReadonlyArray<Replay>>)
  }
  const find = SqlSchema.findAll({
    Request,
    Result: ReplayFromRow,
    execute: ({ ids, userId }) => {
      const owned = userId === undefined
        ? sql``
        : userId === null
        ? sql` AND user_id IS NULL`
        : sql` AND user_id = ${userId}`
      return sql`SELECT replay_of, id, replay_from, created_at FROM (
        SELECT replay_of, id, replay_from, created_at,
          ROW_NUMBER() OVER (PARTITION BY replay_of ORDER BY created_at DESC, id DESC) AS n
        FROM workflow_executions WHERE ${sql.in("replay_of", ids)}${owned}
      ) AS replays WHERE n <= ${MAX_REPLAYS_SHOWN} ORDER BY replay_of, created_at DESC, id DESC`
    }
  })
  return Effect.map(find({ ids, userId }), (rows) => {
    const byId = new Map<string, Array<Replay>>()
    for (const row of rows) {
      const list = byId.get(row.replayOf) ?? []
      list.push(row)
      byId.set(row.replayOf, list)
    }
    return byId as ReadonlyMap<string, ReadonlyArray<Replay>>
  })
}
