/**
 * `workingMemory/`: a small structured record per user or conversation, in the instructions, replaced
 * by its own tool. This store keeps the records; workingMemory.ts gives a call its block and tool. The
 * folder imports the agent's definition, the call context, tools and storage; nothing of generation.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { column, NumberColumn } from "../../storage/ColumnSchemas.js"
import type { Owner } from "../callContext.js"

export type WorkingMemoryScope = "user" | "conversation"

/** Which record: an agent's, in a scope, under a key (the conversation id or the user id), of an owner. */
export interface WorkingMemoryKey {
  readonly agentId: string
  readonly scope: WorkingMemoryScope
  readonly key: string
  /** Under authentication, whose record it is (null: anonymous); absent without authentication. */
  readonly owner?: Owner | undefined
}

export interface StoredWorkingMemory {
  /** The record as JSON (the schema's encoded side). */
  readonly value: unknown
  readonly version: number
  readonly updatedAt: string
}

/** Why a replacement did not happen: another write came first (the version moved). */
export interface VersionConflict {
  readonly _tag: "VersionConflict"
  readonly currentVersion: number
}

export class WorkingMemoryStore extends Context.Tag("WorkingMemoryStore")<WorkingMemoryStore, {
  readonly get: (key: WorkingMemoryKey) => Effect.Effect<Option.Option<StoredWorkingMemory>>
  /**
   * Replaces the whole value if the stored version is still `expectedVersion` (0: no record yet);
   * the new version, or the conflict when another write came first.
   */
  readonly replace: (
    key: WorkingMemoryKey,
    json: string,
    expectedVersion: number
  ) => Effect.Effect<{ readonly version: number; readonly updatedAt: string } | VersionConflict>
  /** How many records went (0 or 1). */
  readonly remove: (key: WorkingMemoryKey) => Effect.Effect<number>
}>() {}

const Row = Schema.Struct({
  value: Schema.parseJson(),
  version: NumberColumn,
  updatedAt: column(Schema.String, "updated_at")
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))
const decodeVersions = Schema.decodeUnknown(Schema.Array(Schema.Struct({ version: NumberColumn })))

/** The rows of one record: owner `''` in the unique index is what NULL is here. */
export const recordFilter = (sql: SqlClient.SqlClient, key: WorkingMemoryKey) => {
  const owner = key.owner === undefined || key.owner.userId === null
    ? sql`user_id IS NULL`
    : sql`user_id = ${key.owner.userId}`
  return sql`agent_id = ${key.agentId} AND scope = ${key.scope} AND key = ${key.key} AND ${owner}`
}

export const WorkingMemoryStoreLive = Layer.effect(
  WorkingMemoryStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const span = (name: string, key: WorkingMemoryKey) =>
      Effect.withSpan(`WorkingMemoryStore.${name}`, {
        captureStackTrace: false,
        attributes: { "agent.id": key.agentId, "working_memory.scope": key.scope }
      })

    const get = (key: WorkingMemoryKey) =>
      sql`SELECT value, version, updated_at FROM agent_working_memory WHERE ${recordFilter(sql, key)}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie,
        span("get", key)
      )

    const currentVersion = (key: WorkingMemoryKey) =>
      Effect.map(
        Effect.flatMap(sql`SELECT version FROM agent_working_memory WHERE ${recordFilter(sql, key)}`, decodeVersions),
        (rows): VersionConflict => ({ _tag: "VersionConflict", currentVersion: rows[0]?.version ?? 0 })
      )

    const replace = (key: WorkingMemoryKey, json: string, expectedVersion: number) =>
      Effect.gen(function*() {
        const updatedAt = new Date().toISOString()
        const version = expectedVersion + 1
        // The first write inserts; a concurrent first write hits the unique index and inserts nothing.
        const written = expectedVersion === 0
          ? yield* sql<{ id: number | string }>`INSERT INTO agent_working_memory ${
            sql.insert({
              agent_id: key.agentId,
              scope: key.scope,
              key: key.key,
              user_id: key.owner?.userId ?? null,
              value: json,
              version,
              updated_at: updatedAt
            })
          } ON CONFLICT DO NOTHING RETURNING id`
          : yield* sql<{ id: number | string }>`UPDATE agent_working_memory
            SET value = ${json}, version = ${version}, updated_at = ${updatedAt}
            WHERE ${recordFilter(sql, key)} AND version = ${expectedVersion} RETURNING id`
        return written.length === 1 ? { version, updatedAt } : yield* currentVersion(key)
      }).pipe(Effect.orDie, span("replace", key))

    const remove = (key: WorkingMemoryKey) =>
      sql<{ id: number | string }>`DELETE FROM agent_working_memory WHERE ${recordFilter(sql, key)} RETURNING id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        span("remove", key)
      )

    return WorkingMemoryStore.of({ get, replace, remove })
  })
)
