import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { Forbidden, NotFound } from "../http/Errors.js"
import { QueryInt, Timestamp } from "../http/Query.js"
import { Level, LogEntry, TraceSummary } from "./ObservabilitySchemas.js"
import { SpanRecord } from "./Span.js"

const LogList = Schema.Struct({ logs: Schema.Array(LogEntry), count: Schema.Number })

export const LogFilters = {
  level: Schema.optional(Level),
  since: Schema.optional(Timestamp),
  until: Schema.optional(Timestamp),
  limit: Schema.optional(QueryInt)
}

export const SystemLogFilters = Schema.Struct({
  ...LogFilters,
  agentId: Schema.optional(Schema.String),
  workflowId: Schema.optional(Schema.String),
  executionId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String)
})

const TraceIdPath = Schema.Struct({ traceId: Schema.String })
const SpanIdPath = Schema.Struct({ spanId: Schema.String })

export class ObservabilityApi extends HttpApiGroup.make("observability")
  .add(
    HttpApiEndpoint.get("observabilityStatus", "/observability/status")
      .addSuccess(Success(Schema.Struct({
        enabled: Schema.Boolean,
        storage: Schema.String,
        traceCount: Schema.Number,
        spanCount: Schema.Number,
        logCount: Schema.Number.annotations({ description: "log entries stored, by every instance on the store" }),
        droppedLogs: Schema.Number.annotations({
          description: "log entries this instance dropped since it started because the store could not keep up"
        }),
        liveSubscribers: Schema.Struct({ logs: Schema.Number, spans: Schema.Number }).annotations({
          description: "open live feeds (WebSocket subscriptions)"
        })
      })))
      .annotate(OpenApi.Summary, "Whether tracing is on, where it is stored, and how much is kept")
  )
  .add(
    HttpApiEndpoint.get("listTraces", "/observability/traces")
      .setUrlParams(Schema.Struct({
        entityType: Schema.optional(Schema.Literal("agent", "workflow")),
        entityId: Schema.optional(Schema.String),
        limit: Schema.optional(QueryInt),
        offset: Schema.optional(QueryInt)
      }))
      .addSuccess(Success(Schema.Struct({ traces: Schema.Array(TraceSummary), total: Schema.Number })))
      .annotate(OpenApi.Summary, "Traces, newest first (limit default 50, at most 500)")
  )
  .add(
    HttpApiEndpoint.get("getTrace", "/observability/traces/:traceId").setPath(TraceIdPath)
      .addSuccess(Success(Schema.Struct({ traceId: Schema.String, spans: Schema.Array(SpanRecord) }))).addError(
        NotFound
      )
      .annotate(OpenApi.Summary, "A trace's spans")
  )
  .add(
    HttpApiEndpoint.get("getSpan", "/observability/spans/:spanId").setPath(SpanIdPath)
      .addSuccess(Success(SpanRecord)).addError(NotFound)
      .annotate(OpenApi.Summary, "One span")
  )
  .add(
    HttpApiEndpoint.get("traceLogs", "/observability/traces/:traceId/logs").setPath(TraceIdPath)
      .addSuccess(Success(LogList)).annotate(OpenApi.Summary, "Log entries written inside a trace")
  )
  .add(
    HttpApiEndpoint.get("spanLogs", "/observability/spans/:spanId/logs").setPath(SpanIdPath)
      .addSuccess(Success(LogList)).annotate(OpenApi.Summary, "Log entries written inside a span")
  )
  .add(
    HttpApiEndpoint.get("observabilityLogs", "/observability/logs")
      .setUrlParams(
        Schema.Struct({
          ...LogFilters,
          traceId: Schema.optional(Schema.String),
          spanId: Schema.optional(Schema.String)
        })
      )
      .addSuccess(Success(Schema.Array(LogEntry)))
      .annotate(OpenApi.Summary, "Log query (level is a minimum; default limit 100, at most 1000; newest last)")
  )
  .add(
    HttpApiEndpoint.get("systemLogs", "/api/logs")
      .setUrlParams(SystemLogFilters)
      .addSuccess(Success(Schema.Array(LogEntry)))
      .annotate(OpenApi.Summary, "System log query by agent, workflow, execution or conversation")
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4; charset=utf-8" }))
      .annotate(
        OpenApi.Summary,
        "Metrics in the Prometheus text format (requests by route and status, executions, takeovers, tokens, event-loop delay)"
      )
  )
  .annotate(OpenApi.Title, "Observability")
  .annotate(RouteClassAnnotation, "console")
  .addError(Forbidden)
  .middleware(Authentication)
{}
