import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted, Schema } from "effect"
import { column, NumberColumn, optionalColumn } from "../storage/ColumnSchemas.js"
import type { OwnerShare } from "./DeliverySlots.js"

/** A delivery of the outbox as stored (times are ISO text). */
export const DeliveryFromRow = Schema.Struct({
  id: Schema.String,
  executionId: column(Schema.String, "execution_id"),
  workflowId: column(Schema.String, "workflow_id"),
  owner: Schema.String,
  url: Schema.String,
  event: Schema.String,
  payload: Schema.String,
  truncated: Schema.transform(NumberColumn, Schema.Boolean, {
    strict: true,
    decode: (n) => n !== 0,
    encode: (b) => (b ? 1 : 0)
  }),
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: NumberColumn,
  nextAttemptAt: column(Schema.String, "next_attempt_at"),
  lastStatusCode: optionalColumn(NumberColumn, "last_status_code"),
  lastError: optionalColumn(Schema.String, "last_error"),
  createdAt: column(Schema.String, "created_at"),
  updatedAt: column(Schema.String, "updated_at")
})
export type Delivery = typeof DeliveryFromRow.Type

const decodeDeliveries = Schema.decodeUnknown(Schema.Array(DeliveryFromRow))

/** How an attempt is recorded: delivered, due again at `retryAt`, or failed for good. */
export type AttemptRecord =
  | { readonly status: "delivered"; readonly code: number }
  | { readonly status: "pending"; readonly retryAt: string; readonly code: number | null; readonly error: string }
  | { readonly status: "failed"; readonly code: number | null; readonly error: string }

export interface SecretRow {
  readonly secret: Redacted.Redacted<string>
  readonly previous?: Redacted.Redacted<string> | undefined
  readonly previousUntil?: string | undefined
  readonly createdAt: string
  readonly rotatedAt: string
}

/** An owner's secrets as stored, read into Redacted at once. */
const SecretFromRow = Schema.Struct({
  secret: Schema.Redacted(Schema.String),
  previous: optionalColumn(Schema.Redacted(Schema.String), "previous_secret"),
  previousUntil: optionalColumn(Schema.String, "previous_until"),
  createdAt: column(Schema.String, "created_at"),
  rotatedAt: column(Schema.String, "rotated_at")
})
const decodeOwners = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  workflowId: column(Schema.String, "workflow_id"),
  userId: optionalColumn(Schema.String, "user_id")
})))
const decodeSecrets = Schema.decodeUnknown(Schema.Array(SecretFromRow))

const iso = (ms: number) => new Date(ms).toISOString()

/** The outbox and the owners' secrets (issue #33): every write conditional, so an item is taken once. */
export const makeWebhookStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(Effect.orDie, Effect.withTracerEnabled(false))

  const nextDue = sql<
    { next: string | null }
  >`SELECT MIN(next_attempt_at) AS next FROM webhook_deliveries WHERE status = 'pending'`.pipe(
    Effect.map(([row]) => Option.map(Option.fromNullable(row?.next), Date.parse)),
    untraced
  )

  /**
   * Takes at most `limit` due deliveries, round-robin by owner (each owner's oldest first, then each
   * one's second, …), of each owner at most `share.perOwner` less what this instance holds of it: each
   * one's attempt counted and its next time moved `leaseMs` on (an instance that dies while sending
   * leaves it due again then), in one conditional UPDATE (SKIP LOCKED on Postgres): a delivery is taken
   * by one claimer per attempt.
   */
  const claimDue = (
    limit: number,
    leaseMs: number,
    share: Omit<OwnerShare, "limit"> = { perOwner: limit, held: new Map() }
  ) => {
    const nowMs = Date.now()
    const now = iso(nowMs)
    const held = [...share.held].filter(([, n]) => n > 0)
    const full = held.filter(([, n]) => n >= share.perOwner).map(([owner]) => owner)
    const partial = held.filter(([, n]) => n < share.perOwner)
    const due = sql`status = 'pending' AND next_attempt_at <= ${now}`
    const allowance = partial.length === 0
      ? sql`CAST(${share.perOwner} AS INTEGER)`
      : sql`CASE owner ${
        sql.join(" ", false)(
          partial.map(([owner, n]) => sql`WHEN ${owner} THEN CAST(${share.perOwner - n} AS INTEGER)`)
        )
      }
        ELSE CAST(${share.perOwner} AS INTEGER) END`
    const ranked = sql`SELECT id FROM (
        SELECT id, owner, next_attempt_at, ROW_NUMBER() OVER (PARTITION BY owner ORDER BY next_attempt_at, id) AS turn
        FROM webhook_deliveries WHERE ${due}${full.length === 0 ? sql`` : sql` AND owner NOT IN ${sql.in(full)}`}
      ) ranked WHERE turn <= ${allowance} ORDER BY turn, next_attempt_at, id LIMIT ${limit}`
    const taken = sql.onDialectOrElse({
      // Window functions cannot be locked: the rows picked are locked in an outer SELECT, re-checked.
      pg: () => sql`SELECT id FROM webhook_deliveries WHERE id IN (${ranked}) AND ${due} FOR UPDATE SKIP LOCKED`,
      orElse: () => ranked
    })
    return sql<Record<string, unknown>>`UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ${
      iso(nowMs + leaseMs)
    },
      updated_at = ${now}
      WHERE id IN (${taken}) AND ${due} RETURNING *`.pipe(Effect.flatMap(decodeDeliveries), untraced)
  }

  /** An attempt's outcome, if the delivery is still at that attempt (a later claimer's wins); whether it applied. */
  const record = (delivery: Delivery, outcome: AttemptRecord) => {
    const next = outcome.status === "pending" ? outcome.retryAt : delivery.nextAttemptAt
    const error = outcome.status === "delivered" ? null : outcome.error
    return sql<{ id: string }>`UPDATE webhook_deliveries SET status = ${outcome.status}, next_attempt_at = ${next},
      last_status_code = ${outcome.code}, last_error = ${error}, updated_at = ${iso(Date.now())}
      WHERE id = ${delivery.id} AND status = 'pending' AND attempts = ${delivery.attempts} RETURNING id`.pipe(
      Effect.map((rows) => rows.length > 0),
      untraced
    )
  }

  /** An execution's deliveries, oldest first, at most `limit`. */
  const ofExecution = (executionId: string, limit: number) =>
    sql<Record<string, unknown>>`SELECT * FROM webhook_deliveries WHERE execution_id = ${executionId}
      ORDER BY created_at, id LIMIT ${limit}`.pipe(Effect.flatMap(decodeDeliveries), untraced)

  /** Who an execution belongs to and its workflow; none when it does not exist. */
  const executionOwner = (executionId: string) =>
    sql`SELECT workflow_id, user_id FROM workflow_executions WHERE id = ${executionId}`.pipe(
      Effect.flatMap(decodeOwners),
      Effect.map((rows) => Option.fromNullable(rows[0])),
      untraced
    )

  const secretOf = (owner: string) =>
    sql`SELECT secret, previous_secret, previous_until, created_at, rotated_at FROM webhook_secrets WHERE owner = ${owner}`
      .pipe(
        Effect.flatMap(decodeSecrets),
        Effect.map((rows): Option.Option<SecretRow> => Option.fromNullable(rows[0])),
        untraced
      )

  /** The owner's secret replaced by `secret`; the one it replaces still signs until `previousUntil`. */
  const rotate = (owner: string, secret: Redacted.Redacted<string>, previousUntil: string) => {
    const now = iso(Date.now())
    return sql`INSERT INTO webhook_secrets (owner, secret, previous_secret, previous_until, created_at, rotated_at)
      VALUES (${owner}, ${Redacted.value(secret)}, NULL, NULL, ${now}, ${now})
      ON CONFLICT (owner) DO UPDATE SET previous_secret = webhook_secrets.secret, previous_until = ${previousUntil},
        secret = excluded.secret, rotated_at = excluded.rotated_at`.pipe(Effect.asVoid, untraced)
  }

  return { nextDue, claimDue, record, ofExecution, executionOwner, secretOf, rotate }
})
export type WebhookStore = Effect.Effect.Success<typeof makeWebhookStore>
