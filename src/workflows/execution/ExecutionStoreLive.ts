import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { ServerConfig } from "../../config/ServerConfig.js"
import { defaultWebhookSettings } from "../../config/WebhookSettings.js"
import { column } from "../../storage/ColumnSchemas.js"
import { committingStatements, storeCommitsOrInline } from "../../storage/StoreCommits.js"
import { ownTransaction } from "../../storage/transaction.js"
import { enqueueDelivery } from "../../webhooks/WebhookOutbox.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import { retryUpdate } from "../steps/RetryState.js"
import { pageLength } from "./EventPages.js"
import { deleteFinishedExecutions } from "./executionDeletion.js"
import { insertExecution } from "./ExecutionInsert.js"
import {
  type Claim,
  type Ending,
  ExecutionFromRow,
  ExecutionListingFromRow,
  type ExecutionQuery,
  HolderFromRow,
  json,
  now,
  type StoredEvent,
  StoredEventFromRow,
  VALUE_COLUMNS
} from "./ExecutionRows.js"
import { ExecutionStore } from "./ExecutionStore.js"
import { findReplays } from "./replayLinks.js"
import { type makeStaging, resolveRows, writeWithEvents } from "./ValueRows.js"

type Staging = ReturnType<typeof makeStaging>

/** ExecutionStore on SQL (Postgres or SQLite): every write conditional, through the group commit. */

/**
 * The listing's statement. The page is found in a covering index (migration 0006), so a deep offset
 * skips index entries without reading rows; only the page's rows are then read, and only the columns
 * a listing shows.
 */
export const listingQuery = (sql: SqlClient.SqlClient, query: ExecutionQuery) => {
  const whole = query.wholeBytes === undefined ? sql`TRUE` : sql`history_bytes <= ${query.wholeBytes}`
  const filters = [
    ...(query.userId === undefined
      ? []
      : [query.userId === null ? sql`user_id IS NULL` : sql`user_id = ${query.userId}`]),
    ...(query.workflowId === undefined ? [] : [sql`workflow_id = ${query.workflowId}`]),
    // A parked sleeper ('sleeping', issue #31) and a queued execution (issue #33) are running to clients.
    ...(query.status === undefined
      ? []
      : [
        query.status === "running" ? sql`status IN ('running', 'sleeping', 'queued')` : sql`status = ${query.status}`
      ]),
    ...(query.waiting === undefined ? [] : [sql`status = 'queued'`]),
    ...(query.from === undefined ? [] : [sql`created_at > ${query.from}`]),
    ...(query.to === undefined ? [] : [sql`created_at < ${query.to}`])
  ]
  return sql`SELECT id, workflow_id, workflow_name, status, metadata, created_at, updated_at, history_bytes, wake_at, replay_of, replay_from, queued_at,
    CASE WHEN ${whole} THEN input END AS input, CASE WHEN ${whole} THEN output END AS output
    FROM workflow_executions WHERE id IN (
      SELECT id FROM workflow_executions ${filters.length ? sql`WHERE ${sql.and(filters)}` : sql``}
      ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}
    ) ORDER BY created_at DESC, id DESC`
}

export const ExecutionStoreLive = Layer.scoped(
  ExecutionStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const submit = yield* storeCommitsOrInline
    // Store operations are not traced (neither are their SQL statements): they run under the spans
    // of the requests, executions and steps that make them, and writes share group-commit transactions.
    const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.orDie, Effect.withTracerEnabled(false))
    const commit = committingStatements(submit)
    const webhooks = Option.match(yield* Effect.serviceOption(ServerConfig), {
      onNone: () => undefined,
      onSome: (c) => c.webhooks
    }) ?? defaultWebhookSettings

    /**
     * A conditional write that bumps `last_seq` by the number of events and returns it; when it
     * changed the row, the events are appended with their numbers (in the same transaction). The
     * number of the last event, or none when its condition did not hold.
     */
    const transition = (
      id: string,
      events: ReadonlyArray<WorkflowEvent>,
      /** Counts the write with `staging.counted`, last in its SET (after every text it stages). */
      update: (staging: Staging) => Statement.Statement<unknown>,
      /** The write's condition when it may end or suspend the execution: its callback's delivery is queued with it (issue #33). */
      ending?: Statement.Fragment
    ) =>
      // The values of the events and of the row are stored once (StoredValues), with the write.
      writeWithEvents(submit, id, events, (staging) => {
        const enqueue = ending === undefined ? undefined : enqueueDelivery(sql, ending, events, webhooks)
        return enqueue === undefined ? [update(staging)] : [enqueue, update(staging)]
      })

    /** An ending's callback condition: none when the claim knows its execution has no callback (the common case: no statement). */
    const callbackOf = (
      claim: Claim,
      condition: Statement.Fragment
    ) => (claim.webhook === false ? undefined : condition)

    /** The rows a claim may still write: running, at its version, and its owner's when it names one. */
    const held = (claim: Claim) =>
      claim.owner === undefined
        // An outside suspend: a parked sleeper ('sleeping', issue #31) may be suspended too.
        ? sql`id = ${claim.id} AND status IN ('running', 'sleeping') AND version = ${claim.version}`
        : sql`id = ${claim.id} AND status = 'running' AND version = ${claim.version} AND owner = ${claim.owner}`

    /** The columns an ending sets, besides the counter. */
    const ended = (staging: Staging, ending: Ending, at: string) =>
      sql`status = ${ending.status}, output = ${
        ending.status === "completed" && ending.output !== undefined ? staging.text(ending.output) : null
      },
        error = ${ending.status === "error" ? ending.error : null},
        error_detail = ${
        ending.status === "error" && ending.errorDetail !== undefined ? JSON.stringify(ending.errorDetail) : null
      }, ended_at = ${at}, owner = NULL`

    const create: ExecutionStore["Type"]["create"] = (e, events) =>
      transition(e.id, events, (staging) => insertExecution(sql, staging, e, events.length))

    /** Execution rows with their values read back whole. */
    const resolveExecutions = (rows: ReadonlyArray<Record<string, unknown>>) =>
      resolveRows(sql, rows, VALUE_COLUMNS, (row) => String(row.id))
    const findExecution = SqlSchema.findOne({
      Request: Schema.String,
      Result: ExecutionFromRow,
      execute: (id) =>
        Effect.flatMap(
          sql<Record<string, unknown>>`SELECT * FROM workflow_executions WHERE id = ${id}`,
          resolveExecutions
        )
    })
    const get = (id: string) => untraced(findExecution(id))

    const exists = (id: string) =>
      sql<{ id: string }>`SELECT id FROM workflow_executions WHERE id = ${id}`.pipe(
        Effect.map((rows) => rows.length > 0),
        untraced
      )

    const append: ExecutionStore["Type"]["append"] = (claim, events) =>
      transition(
        claim.id,
        events,
        (staging) =>
          sql`UPDATE workflow_executions SET last_seq = last_seq + ${events.length}, updated_at = ${
            events[0].timestamp
          },
          ${staging.counted(sql, claim.id)}
          WHERE ${held(claim)} RETURNING last_seq`
      )

    const advance: ExecutionStore["Type"]["advance"] = (claim, c, events, ending) => {
      // The time of the last event: an ending's `ended_at` is its event's timestamp, as elsewhere.
      const at = events.at(-1)?.timestamp ?? now()
      return transition(claim.id, events, (staging) =>
        sql`UPDATE workflow_executions SET step_index = ${c.stepIndex},
          current_data = ${c.currentData === undefined ? null : staging.text(c.currentData)},
          step_data = ${staging.text(c.stepData)}, resume_data = NULL, last_seq = last_seq + ${events.length},
          updated_at = ${at}${ending === undefined ? sql`` : sql`, ${ended(staging, ending, at)}`}, ${
          staging.counted(sql, claim.id)
        }
          WHERE ${held(claim)} RETURNING last_seq`, ending === undefined ? undefined : callbackOf(claim, held(claim)))
    }

    const finish: ExecutionStore["Type"]["finish"] = (claim, ending, event) =>
      transition(
        claim.id,
        [event],
        (staging) =>
          sql`UPDATE workflow_executions SET ${ended(staging, ending, event.timestamp)}, last_seq = last_seq + 1,
          updated_at = ${event.timestamp}, ${staging.counted(sql, claim.id)}
          WHERE ${held(claim)} RETURNING last_seq`,
        callbackOf(claim, held(claim))
      )

    const suspend: ExecutionStore["Type"]["suspend"] = (claim, suspension, event) =>
      transition(
        claim.id,
        [event],
        (staging) =>
          sql`UPDATE workflow_executions SET status = 'suspended', suspension = ${
            JSON.stringify(suspension)
          }, owner = NULL,
          wake_at = ${suspension.wakeAt ?? null},
          step_index = ${suspension.stepIndex}, version = version + 1, last_seq = last_seq + 1, updated_at = ${suspension.suspendedAt},
          ${staging.counted(sql, claim.id)}
          WHERE ${held(claim)} AND step_index = ${claim.atStep} RETURNING last_seq`,
        callbackOf(claim, sql`${held(claim)} AND step_index = ${claim.atStep}`)
      )

    const decodeExecutions = Schema.decodeUnknown(Schema.Array(ExecutionFromRow))
    /** The executions a claim's UPDATE returned. */
    const claimed = (rows: ReadonlyArray<Record<string, unknown>>) =>
      Effect.orDie(Effect.flatMap(resolveExecutions(rows), decodeExecutions))

    const claimResume: ExecutionStore["Type"]["claimResume"] = (execution, resume) =>
      commit(
        sql<
          Record<string, unknown>
        >`UPDATE workflow_executions SET status = 'running', owner = ${resume.owner}, step_index = ${resume.stepIndex},
          resume_data = ${
          json(resume.resumeData) ?? "null"
        }, definition_hash = ${resume.definitionHash}, step_attempt = NULL,
          version = version + 1, updated_at = ${now()}
          WHERE id = ${execution.id} AND status = 'suspended' AND version = ${execution.version} RETURNING *`
      ).pipe(
        Effect.flatMap(claimed),
        Effect.map((executions) => Option.fromNullable(executions[0]))
      )

    const rebase: ExecutionStore["Type"]["rebase"] = (claim, to) =>
      commit(sql<{ id: string }>`UPDATE workflow_executions SET step_index = ${to.stepIndex},
        definition_hash = ${to.definitionHash}, updated_at = ${now()} WHERE ${held(claim)} RETURNING id`).pipe(
        Effect.map((rows) => rows.length > 0)
      )

    const cancel: ExecutionStore["Type"]["cancel"] = (id, event) =>
      transition(
        id,
        [event],
        (staging) =>
          sql`UPDATE workflow_executions SET status = 'cancelled', owner = NULL, version = version + 1, last_seq = last_seq + 1,
          updated_at = ${event.timestamp}, ended_at = ${event.timestamp},
          queued_at = NULL, ${
            staging.counted(sql, id)
          } WHERE id = ${id} AND status IN ('running', 'suspended', 'sleeping', 'queued') RETURNING last_seq`,
        sql`id = ${id} AND status IN ('running', 'suspended', 'sleeping', 'queued')`
      )

    const remove = (id: string) =>
      // On the service's own connection: rare, and its statements depend on each other's results.
      ownTransaction(sql)(deleteFinishedExecutions(sql, [id])).pipe(
        Effect.map((gone) => gone.length > 0),
        untraced
      )

    const findEvents = SqlSchema.findAll({
      Request: Schema.Struct({ id: Schema.String, afterSeq: Schema.Number, limit: Schema.optional(Schema.Number) }),
      Result: StoredEventFromRow,
      execute: ({ afterSeq, id, limit }) =>
        sql<
          Record<string, unknown>
        >`SELECT seq, event FROM workflow_events WHERE execution_id = ${id} AND seq > ${afterSeq}
          ORDER BY seq${limit === undefined ? sql`` : sql` LIMIT ${limit}`}`.pipe(
          Effect.flatMap((rows) => resolveRows(sql, rows, ["event"], () => id))
        )
    })
    const events = (id: string, afterSeq: number, limit?: number) => untraced(findEvents({ id, afterSeq, limit }))
    const eventPage = (id: string, afterSeq: number, toSeq?: number, most?: number) =>
      untraced(
        Effect.flatMap(pageLength(sql, id, afterSeq, toSeq, most), (limit) =>
          limit === 0 ? Effect.succeed([]) : findEvents({ id, afterSeq, limit }))
      )

    const findEventsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Schema.Struct({ ...StoredEventFromRow.fields, executionId: column(Schema.String, "execution_id") }),
      execute: (ids) =>
        sql<Record<string, unknown>>`SELECT execution_id, seq, event FROM workflow_events
          WHERE ${sql.in("execution_id", ids)} AND path IS NULL ORDER BY execution_id, seq`.pipe(
          Effect.flatMap((rows) => resolveRows(sql, rows, ["event"], (row) => String(row.execution_id)))
        )
    })
    const eventsOf = (ids: ReadonlyArray<string>) =>
      (ids.length === 0 ? Effect.succeed([]) : findEventsOf(ids)).pipe(
        Effect.map((rows) => {
          const byId = new Map<string, Array<StoredEvent>>()
          for (const { executionId, ...stored } of rows) {
            const list = byId.get(executionId) ?? []
            list.push(stored)
            byId.set(executionId, list)
          }
          return byId as ReadonlyMap<string, ReadonlyArray<StoredEvent>>
        }),
        untraced
      )

    const decodeListings = Schema.decodeUnknown(Schema.Array(ExecutionListingFromRow))
    const list = (query: ExecutionQuery) =>
      listingQuery(sql, query).pipe(
        Effect.flatMap((rows) => resolveRows(sql, rows, ["input", "output"], (row) => String(row.id))),
        Effect.flatMap(decodeListings),
        untraced
      )

    const replaysOf = (ids: ReadonlyArray<string>, userId?: string | null) => untraced(findReplays(sql, ids, userId))

    const claimOrphans: ExecutionStore["Type"]["claimOrphans"] = (owner, { limit, liveOwners }) => {
      const orphaned = sql`status = 'running' AND (owner IS NULL OR ${
        liveOwners === undefined ? sql`owner <> ${owner}` : sql`owner NOT IN (${liveOwners})`
      })`
      // Looked for first on the service's connection: at start-up and on every poll there is most
      // often none, and a read answers without waiting for a commit.
      return sql<{ id: string }>`SELECT id FROM workflow_executions WHERE ${orphaned} LIMIT 1`.pipe(
        untraced,
        Effect.flatMap((found) =>
          found.length === 0
            ? Effect.succeed([])
            : commit(
              sql<
                Record<string, unknown>
              >`UPDATE workflow_executions SET owner = ${owner}, version = version + 1, updated_at = ${now()}
              WHERE id IN (
                SELECT id FROM workflow_executions WHERE ${orphaned}
                ORDER BY created_at LIMIT ${limit}${
                sql.onDialectOrElse({ pg: () => sql` FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })
              }
              ) AND status = 'running' RETURNING *`
            ).pipe(Effect.flatMap(claimed))
        )
      )
    }

    const release = (claim: Claim) =>
      commit(
        sql<{ id: string }>`UPDATE workflow_executions SET owner = NULL, version = version + 1, updated_at = ${now()}
        WHERE ${held(claim)} RETURNING id`
      ).pipe(Effect.map((rows) => rows.length > 0))

    const releaseLeftBy = (owner: string) =>
      commit(
        sql<{ id: string }>`UPDATE workflow_executions SET owner = NULL, version = version + 1, updated_at = ${now()}
        WHERE status = 'running' AND owner = ${owner} RETURNING id`
      ).pipe(Effect.map((rows) => rows.length))

    const findHolders = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: HolderFromRow,
      execute: (ids) =>
        sql`SELECT id, status, owner, version, last_seq FROM workflow_executions WHERE ${sql.in("id", ids)}`
    })
    const holders = (ids: ReadonlyArray<string>) => ids.length === 0 ? Effect.succeed([]) : untraced(findHolders(ids))

    return ExecutionStore.of({
      create,
      get,
      exists,
      append,
      advance,
      finish,
      retry: (claim, state, event) =>
        transition(
          claim.id,
          [event],
          (staging) => retryUpdate(sql, held(claim), state, event.timestamp, staging.counted(sql, claim.id))
        ),
      suspend,
      claimResume,
      rebase,
      cancel,
      remove,
      events,
      eventPage,
      eventsOf,
      list,
      replaysOf,
      claimOrphans,
      release,
      releaseLeftBy,
      holders
    })
  })
)
