/**
 * `approvals/`: tool approval (issue #32). This store keeps the requests a call stopped on and takes
 * their answers; the rest of the folder plugs approval into the generation core (plugin.ts: the gate,
 * the stopped call's rows and its continuation). It may import the core's contract and messages, the
 * delegation and input guardrails it continues through, and the stores; never the registry.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { createHash } from "node:crypto"
import { Conflict, excerpt, NotFound, ValidationError } from "../../core/errors.js"
import { canonicalJson } from "../../core/jsonText.js"
import { column, NumberColumn } from "../../storage/ColumnSchemas.js"
import { ownTransaction } from "../../storage/transaction.js"
import type { Owner } from "../callContext.js"
import type {
  AnsweredApproval,
  ApprovalAnswer,
  NewApprovals,
  PendingApproval,
  RequestTrace
} from "../generation/contract.js"

// The values a call carries (the generation core's contract), re-exported for the workflows that answer them.
export type { ApprovalAnswer, PendingApproval }

/** A generation whose every pending approval was just answered: it may continue. */
export interface AnsweredCall {
  readonly callId: string
  readonly state: unknown
  readonly answers: ReadonlyArray<AnsweredApproval>
  /** The spans of the calls that asked (one, unless a continuation asked again). */
  readonly requestedIn: ReadonlyArray<RequestTrace>
}

/** Who answers: the workflow execution a call is bound to (its state's `boundTo`), and whether with expiry denials. */
export interface AnsweredVia {
  readonly boundTo?: string | undefined
  readonly expired?: boolean | undefined
}

const boundOf = (state: unknown): unknown =>
  typeof state === "object" && state !== null && "boundTo" in state ? state.boundTo : undefined

/** The digest a request is bound to: its tool and its input (keys sorted). */
export const inputHash = (toolName: string, input: unknown): string =>
  createHash("sha256").update(`${toolName}\u0000${canonicalJson(input)}`).digest("base64url")

export class ApprovalStore extends Context.Tag("ApprovalStore")<ApprovalStore, {
  readonly request: (approvals: NewApprovals) => Effect.Effect<void>
  /**
   * Answers a generation's pending approvals, each once (a conditional UPDATE): all of them, or none
   * (the transaction is rolled back). Another agent's, another owner's or an unknown id is NotFound;
   * one answered already or expired is a Conflict; leaving one of the call's requests unanswered, or
   * naming two calls, is a ValidationError. `via` (a workflow's step, CallRequest): the requests of a
   * call bound to a workflow execution are found only by it (NotFound to anyone else); `expired`
   * denials of requests that expired unanswered (its due work) are taken past their expiry too.
   */
  readonly answer: (
    agentId: string,
    answers: ReadonlyArray<ApprovalAnswer>,
    owner: Owner | undefined,
    via?: AnsweredVia
  ) => Effect.Effect<AnsweredCall, NotFound | Conflict | ValidationError>
}>() {}

const Row = Schema.Struct({
  id: Schema.String,
  agentId: column(Schema.String, "agent_id"),
  callId: column(Schema.String, "call_id"),
  owned: NumberColumn,
  owner: Schema.NullOr(Schema.String),
  toolName: column(Schema.String, "tool_name"),
  toolCallId: column(Schema.String, "tool_call_id"),
  inputHash: column(Schema.String, "input_hash"),
  state: Schema.parseJson(),
  status: Schema.String,
  expiresAt: column(Schema.String, "expires_at"),
  traceId: column(Schema.NullOr(Schema.String), "trace_id"),
  spanId: column(Schema.NullOr(Schema.String), "span_id")
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

const notFound = (id: string) => new NotFound({ message: `Approval ${excerpt(id, 64)} not found` })

export const ApprovalStoreLive = Layer.effect(
  ApprovalStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const transaction = ownTransaction(sql, "agent_tool_approvals")

    const request = Effect.fn("ApprovalStore.request", { captureStackTrace: false })(
      function*(approvals: NewApprovals) {
        yield* Effect.annotateCurrentSpan("agent.id", approvals.agentId)
        const now = new Date().toISOString()
        const state = JSON.stringify(approvals.state)
        yield* sql`INSERT INTO agent_tool_approvals ${
          sql.insert(approvals.requests.map((one) => ({
            id: one.approvalId,
            agent_id: approvals.agentId,
            call_id: approvals.callId,
            owned: approvals.owner === undefined ? 0 : 1,
            owner: approvals.owner?.userId ?? null,
            conversation_id: approvals.conversationId ?? null,
            tool_name: one.toolName,
            tool_call_id: one.toolCallId,
            input_hash: inputHash(one.toolName, one.input),
            input: JSON.stringify(one.input ?? null),
            state,
            status: "pending",
            reason: null,
            expires_at: approvals.expiresAt.toISOString(),
            created_at: now,
            answered_at: null,
            trace_id: approvals.trace?.traceId ?? null,
            span_id: approvals.trace?.spanId ?? null
          })))
        }`
      },
      Effect.orDie
    )

    const visible = (row: typeof Row.Type, agentId: string, owner: Owner | undefined, via: AnsweredVia) =>
      row.agentId === agentId && (owner === undefined || (row.owned === 1 && row.owner === owner.userId)) &&
      boundOf(row.state) === via.boundTo

    const answerAll = (
      agentId: string,
      answers: ReadonlyArray<ApprovalAnswer>,
      owner: Owner | undefined,
      via: AnsweredVia
    ) =>
      Effect.gen(function*() {
        const ids = answers.map((answer) => answer.approvalId)
        const rows = yield* sql`SELECT * FROM agent_tool_approvals WHERE ${sql.in("id", ids)}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.orDie
        )
        const byId = new Map(rows.map((row) => [row.id, row]))
        const unknown = ids.find((id) => !byId.has(id) || !visible(byId.get(id)!, agentId, owner, via))
        if (unknown !== undefined) return yield* notFound(unknown)
        const altered = answers.find(({ approvalId, expect }) =>
          expect !== undefined &&
          (byId.get(approvalId)!.toolName !== expect.toolName || byId.get(approvalId)!.inputHash !== expect.inputHash)
        )
        if (altered !== undefined) return yield* notFound(altered.approvalId)
        const callIds = new Set(rows.map((row) => row.callId))
        if (callIds.size > 1) {
          return yield* ValidationError.fromIssues([{
            path: ["options", "approvals"],
            message: "must answer the approvals of one call"
          }])
        }
        const now = new Date().toISOString()
        const answered: Array<AnsweredApproval> = []
        for (const answer of answers) {
          const row = byId.get(answer.approvalId)!
          const won = yield* sql<{ id: string }>`UPDATE agent_tool_approvals
            SET status = ${answer.approved ? "approved" : "denied"}, reason = ${
            answer.reason ?? null
          }, answered_at = ${now}
            WHERE id = ${row.id} AND ${
            via.expired === true && !answer.approved
              ? sql`status IN ('pending', 'expired')`
              : sql`status = 'pending' AND expires_at > ${now}`
          }
            RETURNING id`.pipe(Effect.orDie)
          if (won.length === 0) {
            // Read again: a concurrent answer may have won since the rows were read.
            const current = (yield* sql<
              { status: string }
            >`SELECT status FROM agent_tool_approvals WHERE id = ${row.id}`.pipe(Effect.orDie)).at(0)
            return yield* new Conflict({
              message: current?.status === "approved" || current?.status === "denied"
                ? `Approval ${row.id} was answered already`
                : `Approval ${row.id} expired at ${row.expiresAt}`
            })
          }
          answered.push({
            approvalId: answer.approvalId,
            approved: answer.approved,
            reason: answer.reason,
            toolName: row.toolName,
            toolCallId: row.toolCallId,
            inputHash: row.inputHash
          })
        }
        const [first] = rows
        const left = yield* sql<{ id: string }>`SELECT id FROM agent_tool_approvals
          WHERE call_id = ${first.callId} AND status = 'pending'`.pipe(Effect.orDie)
        if (left.length > 0) {
          return yield* ValidationError.fromIssues([{
            path: ["options", "approvals"],
            message: `must answer every pending approval of the call; missing: ${
              left.map((row) => row.id).slice(0, 10).join(", ")
            }`
          }])
        }
        const requestedIn = new Map(rows.flatMap((row) =>
          row.traceId === null || row.spanId === null
            ? []
            : [[`${row.traceId}/${row.spanId}`, { traceId: row.traceId, spanId: row.spanId }]]
        ))
        return { callId: first.callId, state: first.state, answers: answered, requestedIn: [...requestedIn.values()] }
      })

    // An expired request is marked so, once its answer was refused (outside the refused transaction).
    const markExpired = (ids: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const now = new Date().toISOString()
        return sql`UPDATE agent_tool_approvals SET status = 'expired'
          WHERE ${sql.in("id", ids)} AND status = 'pending' AND expires_at <= ${now}`
      }).pipe(Effect.ignore)

    const answer = Effect.fn("ApprovalStore.answer", { captureStackTrace: false })(
      function*(
        agentId: string,
        answers: ReadonlyArray<ApprovalAnswer>,
        owner: Owner | undefined,
        via: AnsweredVia = {}
      ) {
        yield* Effect.annotateCurrentSpan("agent.id", agentId)
        const ids = answers.map((one) => one.approvalId)
        if (new Set(ids).size !== ids.length) {
          return yield* ValidationError.fromIssues([{
            path: ["options", "approvals"],
            message: "must name each approval once"
          }])
        }
        return yield* transaction(answerAll(agentId, answers, owner, via)).pipe(
          Effect.tapErrorTag("Conflict", () => markExpired(ids)),
          Effect.catchTag("SqlError", Effect.die)
        )
      }
    )

    return ApprovalStore.of({ request, answer })
  })
)
