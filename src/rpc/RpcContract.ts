import { Rpc, RpcGroup, RpcMiddleware } from "@effect/rpc"
import { Schema } from "effect"
import { AgentInput, GenerationOptions, ModelRef, PendingApproval, Usage } from "../agents/AgentsSchemas.js"
import { CurrentCaller } from "../auth/Authentication.js"
import {
  BadRequest,
  Conflict,
  ExecutionFailed,
  Forbidden,
  GuardrailBlocked,
  NotFound,
  TooManyRequests,
  Unauthorized,
  UnprocessableEntity,
  ValidationError
} from "../core/errors.js"
import { jsonValueIssue } from "../http/JsonInput.js"
import { Level, LogEntry } from "../observability/ObservabilitySchemas.js"
import {
  ExecuteRequest,
  ExecutionResult,
  ExecutionStatus,
  IdempotencyKey,
  WorkflowEvent
} from "../workflows/api/WorkflowSchemas.js"

/**
 * The RPC group served at `/rpc` (WebSocket, JSON messages): the streams an `HttpApiClient` cannot type.
 * Each procedure is the twin of an HTTP route and is authorised exactly as that route is.
 */

/** One event of an agent's stream, as `POST /agents/:id/stream` sends it. */
export const AgentStreamEvent = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text-delta"), delta: Schema.String }),
  Schema.Struct({ type: Schema.Literal("reasoning-delta"), delta: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("tool-call"),
    toolCallId: Schema.String,
    toolName: Schema.String,
    args: Schema.Unknown
  }),
  Schema.Struct({
    type: Schema.Literal("tool-result"),
    toolCallId: Schema.String,
    toolName: Schema.String,
    result: Schema.Unknown
  }),
  Schema.Struct({ type: Schema.Literal("tool-approval-request"), ...PendingApproval.fields }),
  Schema.Struct({
    type: Schema.Literal("finish"),
    finishReason: Schema.String,
    usage: Usage,
    model: Schema.optional(ModelRef)
  }),
  /** `guardrail`: the output guardrail that stopped the stream. */
  Schema.Struct({ type: Schema.Literal("error"), error: Schema.String, guardrail: Schema.optional(Schema.String) })
).annotations({ identifier: "AgentStreamEvent" })
export type AgentStreamEvent = typeof AgentStreamEvent.Type

/** The last event of every workflow stream: the execution's result (as of when it settled or suspended). */
export const WorkflowResultEvent = Schema.Struct({
  type: Schema.Literal("workflow-result"),
  executionId: Schema.String,
  status: ExecutionStatus,
  result: Schema.Unknown,
  endAt: Schema.NullOr(Schema.String),
  suspension: ExecutionResult.fields.suspension,
  error: Schema.optional(Schema.String),
  errorDetail: WorkflowEvent.fields.errorDetail
}).annotations({ identifier: "WorkflowResultEvent" })

/** One numbered entry of an execution's stream; `seq` is what `WorkflowAttach` resumes after. */
export const WorkflowUpdate = Schema.Struct({
  seq: Schema.Number,
  event: Schema.Union(WorkflowEvent, WorkflowResultEvent)
}).annotations({ identifier: "WorkflowUpdate" })
export type WorkflowUpdate = typeof WorkflowUpdate.Type

/** As `/ws/logs` sends them: one `initial` batch (the newest matching entries), then an `update` per entry. */
export const LogFeedMessage = Schema.Struct({
  type: Schema.Literal("initial", "update"),
  logs: Schema.Array(LogEntry)
}).annotations({ identifier: "LogFeedMessage" })
export type LogFeedMessage = typeof LogFeedMessage.Type

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())

/**
 * A procedure's payload: first the rules every HTTP body is held to where it is parsed (src/http/JsonInput.ts:
 * finite numbers, no NUL in a string or key, at most 64 levels of nesting), on the payload as it came, then
 * its fields' schema. A payload that breaks a rule fails to decode, naming where, before any service sees it.
 */
const checkedPayload = <Fields extends Schema.Struct.Fields>(name: string, fields: Fields) =>
  Schema.compose(
    Schema.Unknown.pipe(Schema.filter((payload) => {
      const issue = jsonValueIssue(payload)
      return issue === undefined || ValidationError.fromIssues([issue]).message
    })).annotations({ identifier: "JsonInput" }),
    Schema.Struct(fields).annotations({ identifier: `${name} payload` }),
    { strict: false }
  ).annotations({ identifier: `${name} payload` })

/**
 * Decides, per call, from the `authorization` header (`Bearer <JWT>`) and `x-console-access-key`, as the
 * HTTP route the procedure mirrors; provides the caller to the handler. Set the headers from the client
 * with `RpcClient.withHeaders` (or on the WebSocket handshake, where the client can).
 */
export class RpcAuthentication extends RpcMiddleware.Tag<RpcAuthentication>()("RpcAuthentication", {
  failure: Schema.Union(Unauthorized, Forbidden),
  provides: CurrentCaller
}) {}

/** Holds a connection to MAX_STREAMS_PER_CONNECTION open calls (src/rpc/RpcLimits.ts); another fails at once. */
export class RpcStreamLimit extends RpcMiddleware.Tag<RpcStreamLimit>()("RpcStreamLimit", {
  failure: TooManyRequests,
  wrap: true
}) {}

export class ServiceRpcs extends RpcGroup.make(
  /** Twin of `POST /agents/:id/stream`. Interrupting the stream aborts the model call. */
  Rpc.make("AgentStream", {
    payload: checkedPayload("AgentStream", {
      agentId: Schema.String,
      /** Left out only to answer a call's pending approvals (`options.approvals`). */
      input: Schema.optional(AgentInput),
      options: Schema.optional(GenerationOptions)
    }),
    success: AgentStreamEvent,
    error: Schema.Union(NotFound, ValidationError, ExecutionFailed, Forbidden, GuardrailBlocked, Conflict),
    stream: true
  }),
  /** Twin of `POST /workflows/:id/stream`: starts an execution and follows it until it settles or suspends. */
  Rpc.make("WorkflowStream", {
    payload: checkedPayload("WorkflowStream", {
      workflowId: Schema.String,
      ...ExecuteRequest.fields,
      idempotencyKey: Schema.optional(IdempotencyKey)
    }),
    success: WorkflowUpdate,
    error: Schema.Union(
      NotFound,
      ValidationError,
      BadRequest,
      UnprocessableEntity,
      Forbidden,
      Conflict,
      TooManyRequests
    ),
    stream: true
  }),
  /** Twin of `GET /workflows/:id/executions/:executionId/stream`: the events numbered after `after` (default 0), then live ones. */
  Rpc.make("WorkflowAttach", {
    payload: checkedPayload("WorkflowAttach", {
      workflowId: Schema.String,
      executionId: Schema.String,
      after: Schema.optional(NonNegativeInt)
    }),
    success: WorkflowUpdate,
    error: NotFound,
    stream: true
  }),
  /** Twin of `/ws/logs` (a console route: the console key in production, own origin only). */
  Rpc.make("LiveLogs", {
    payload: checkedPayload("LiveLogs", {
      level: Schema.optional(Level),
      agentId: Schema.optional(Schema.String),
      workflowId: Schema.optional(Schema.String),
      executionId: Schema.optional(Schema.String),
      conversationId: Schema.optional(Schema.String),
      /** How many of the newest matching entries the initial batch holds (default 100, at most 1000). */
      limit: Schema.optional(NonNegativeInt)
    }),
    success: LogFeedMessage,
    stream: true
  })
).middleware(RpcAuthentication).middleware(RpcStreamLimit) {}

/** The path the group is served at (a WebSocket). */
export const RPC_PATH = "/rpc"
