import { Resource } from "@effect/opentelemetry/Resource"
import { ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api"
import type { LogAttributes, SeverityNumber } from "@opentelemetry/api-logs"
import { Effect, Layer } from "effect"
import { LogStore } from "./LogStore.js"
import type { LogEntry } from "./logTable.js"
import { exportsOf } from "./moduleExports.js"
import { otlpUrl } from "./otlpUrl.js"

// OpenTelemetry's SeverityNumber for each of the log's levels (the Logs data model's first of each range).
const SEVERITY: Readonly<Record<string, SeverityNumber>> = {
  trace: 1,
  debug: 5,
  info: 9,
  warn: 13,
  error: 17,
  fatal: 21
}

/** The record's attributes: the ids the log store keeps as columns, then the entry's own. */
const attributesOf = ({ agentId, attributes, conversationId, executionId, workflowId }: LogEntry): LogAttributes => ({
  ...(agentId === undefined ? {} : { agentId }),
  ...(workflowId === undefined ? {} : { workflowId }),
  ...(executionId === undefined ? {} : { executionId }),
  ...(conversationId === undefined ? {} : { conversationId }),
  ...(attributes as LogAttributes)
})

// The SDK and the exporter are loaded only when an endpoint is configured.
const loggerProvider = (endpoint: string) =>
  Effect.flatMap(Resource, (resource) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        const [sdk, otlp] = await Promise.all([
          import("@opentelemetry/sdk-logs"),
          import("@opentelemetry/exporter-logs-otlp-http")
        ])
        const { BatchLogRecordProcessor, LoggerProvider } = exportsOf(sdk)
        const { OTLPLogExporter } = exportsOf(otlp)
        const exporter = new OTLPLogExporter({ url: otlpUrl(endpoint, "logs") })
        // The processor's queue is bounded (2,048 records): past it, records are dropped, never waited for.
        return new LoggerProvider({
          resource,
          processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 500 })]
        })
      }),
      // A live collector takes the last records in milliseconds; a dead one must not hold up the exit.
      (provider) =>
        Effect.promise(() => provider.shutdown().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
    ))

/**
 * Every entry the log store records (redacted, capped: recorded once for both), also to an OTLP/HTTP
 * collector at `<endpoint>/v1/logs`, with the trace and span it was logged in and the service's
 * resource (`service.instance.id` included). Needs the OpenTelemetry `Resource` (TracingLive provides it).
 */
export const OtlpLogsLive = (options: { readonly endpoint: string; readonly serviceName: string }) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const otel = (yield* loggerProvider(options.endpoint)).getLogger(options.serviceName)
    const store = yield* LogStore
    yield* store.forward((entry) =>
      otel.emit({
        timestamp: Date.parse(entry.timestamp),
        severityNumber: SEVERITY[entry.level],
        severityText: entry.level.toUpperCase(),
        body: entry.message,
        attributes: attributesOf(entry),
        ...(entry.traceId === undefined || entry.spanId === undefined ? {} : {
          context: trace.setSpanContext(ROOT_CONTEXT, {
            traceId: entry.traceId,
            spanId: entry.spanId,
            traceFlags: TraceFlags.SAMPLED
          })
        })
      })
    )
  }))
