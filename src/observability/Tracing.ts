import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"
import { sanitizingProcessor } from "./SanitizingSpanProcessor.js"
import { TraceStore } from "./TraceStore.js"

// The OTLP exporter is loaded only when an endpoint is configured.
const otlpProcessor = (endpoint: string) =>
  Effect.map(Effect.promise(() => import("@opentelemetry/exporter-trace-otlp-http")), ({ OTLPTraceExporter }) =>
    new BatchSpanProcessor(
      new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, "")}/v1/traces` }),
      { scheduledDelayMillis: 500 }
    ))

/**
 * Effect's tracer backed by OpenTelemetry: every span goes to the TraceStore and, when
 * `otlpEndpoint` (OTEL_EXPORTER_OTLP_ENDPOINT) is set, to that OTLP/HTTP collector too. Both see only
 * the redacted, size-capped span (see Redaction.ts).
 */
export const TracingLive = (options: { readonly serviceName: string; readonly otlpEndpoint?: string | undefined }) =>
  NodeSdk.layer(Effect.gen(function*() {
    const store = yield* TraceStore
    const exporters = options.otlpEndpoint ? [yield* otlpProcessor(options.otlpEndpoint)] : []
    return {
      resource: { serviceName: options.serviceName, serviceVersion: "1.0.0" },
      spanProcessor: sanitizingProcessor([store.processor, ...exporters])
    }
  }))
