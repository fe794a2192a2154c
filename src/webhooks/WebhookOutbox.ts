import type { SqlClient, Statement } from "@effect/sql"
import type { WorkflowEvent } from "../workflows/api/WorkflowSchemas.js"

/** What a delivery tells: the kind of ending (or the suspension) and its data, as sent (issue #33). */
export type WebhookEventType =
  | "execution.completed"
  | "execution.failed"
  | "execution.cancelled"
  | "execution.suspended"

/** The part of a delivery's body made when the execution ends or suspends (its ids are added when sent). */
export interface DeliveryPayload {
  readonly type: WebhookEventType
  readonly timestamp: string
  readonly data: Readonly<Record<string, unknown>>
}

/** Room left in a body for its envelope when its result is cut. */
const ENVELOPE_BYTES = 2048

/** The longest start of `text` whose JSON string (escapes included) takes at most `room` bytes, roughly. */
const prefixWithin = (text: string, room: number) => {
  let prefix = Buffer.from(text).subarray(0, room).toString("utf8").replace(/\uFFFD$/, "")
  for (
    let size = Buffer.byteLength(JSON.stringify(prefix));
    size > room;
    size = Buffer.byteLength(JSON.stringify(prefix))
  ) {
    prefix = prefix.slice(0, Math.max(0, Math.floor(prefix.length * room / size) - 1))
  }
  return prefix
}

const typeOf = (event: WorkflowEvent): WebhookEventType | undefined => {
  switch (event.type) {
    case "workflow-complete":
      return "execution.completed"
    case "workflow-error":
      return "execution.failed"
    case "workflow-cancelled":
      return "execution.cancelled"
    case "workflow-suspended":
      return "execution.suspended"
    default:
      return undefined
  }
}

/**
 * The payload of an ending or suspension event (none for other events). A result (or suspension data)
 * whose JSON passes `maxBytes` less room for the envelope is replaced by the start of its JSON text,
 * `resultTruncated: true`: the whole is read with GET …/executions/:executionId.
 */
export const payloadOf = (
  event: WorkflowEvent,
  maxBytes: number
): { readonly payload: DeliveryPayload; readonly truncated: boolean } | undefined => {
  const type = typeOf(event)
  if (type === undefined) return undefined
  const [field, value] = event.type === "workflow-complete"
    ? ["result", event.output ?? null] as const
    : event.type === "workflow-suspended"
    ? ["suspensionData", event.data ?? null] as const
    : ["error", event.type === "workflow-error" ? (event.error ?? "") : (event.reason ?? "")] as const
  const status = event.type === "workflow-complete"
    ? "completed"
    : event.type === "workflow-error"
    ? "error"
    : event.type === "workflow-cancelled"
    ? "cancelled"
    : "suspended"
  const text = JSON.stringify(value) ?? "null"
  const room = Math.max(0, maxBytes - ENVELOPE_BYTES)
  const truncated = Buffer.byteLength(text) > room
  const kept = truncated ? { [field]: prefixWithin(text, room), resultTruncated: true } : { [field]: value }
  const suspension = event.type === "workflow-suspended"
    ? { reason: event.reason ?? "", stepId: event.from, stepIndex: event.stepIndex ?? 0 }
    : {}
  return { payload: { type, timestamp: event.timestamp, data: { status, ...suspension, ...kept } }, truncated }
}

/**
 * The outbox row of a write that ends or suspends an execution, as a statement of that write's
 * transaction, run BEFORE the write's conditional UPDATE with the same condition (`where`, on the
 * execution's row): a row with a callback URL gets a pending delivery (failed at once when its owner
 * has `maxPending` pending), and none when the condition does not hold. On Postgres the row is locked
 * (FOR UPDATE) so that the UPDATE that follows holds too. None for events that end nothing.
 */
export const enqueueDelivery = (
  sql: SqlClient.SqlClient,
  where: Statement.Fragment,
  events: ReadonlyArray<WorkflowEvent>,
  limits: { readonly payloadMaxBytes: number; readonly maxPendingPerOwner: number }
): Statement.Statement<unknown> | undefined => {
  const last = events.at(-1)
  const made = last === undefined ? undefined : payloadOf(last, limits.payloadMaxBytes)
  if (last === undefined || made === undefined) return undefined
  const over =
    sql`(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.owner = COALESCE(e.user_id, '') AND d.status = 'pending') >= ${limits.maxPendingPerOwner}`
  const at = last.timestamp
  return sql`INSERT INTO webhook_deliveries (id, execution_id, workflow_id, owner, url, event, payload, truncated, status, attempts,
      next_attempt_at, last_status_code, last_error, created_at, updated_at)
    SELECT ${`whd_${crypto.randomUUID()}`}, e.id, e.workflow_id, COALESCE(e.user_id, ''), e.webhook_url, ${made.payload.type},
      ${JSON.stringify(made.payload)}, CAST(${
    made.truncated ? 1 : 0
  } AS INTEGER), CASE WHEN ${over} THEN 'failed' ELSE 'pending' END, 0, ${at}, NULL,
      CASE WHEN ${over} THEN ${`more than ${limits.maxPendingPerOwner} deliveries pending for this owner`} ELSE NULL END, ${at}, ${at}
    FROM workflow_executions e WHERE e.webhook_url IS NOT NULL AND ${where}${
    sql.onDialectOrElse({ pg: () => sql` FOR UPDATE OF e`, orElse: () => sql`` })
  }`
}
