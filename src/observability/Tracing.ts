import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"
import { sanitizingProcessor } from "./SanitizingSpanProcessor.js"
import { TraceStore } from "./TraceStore.js"

/**
 * Effect's tracer backed by OpenTelemetry: every span goes to the TraceStore and, when
 * `otlpEndpoint` (OTEL_EXPORTER_OTLP_ENDPOINT) is set, to that OTLP/HTTP collector too. Both see only
 * the redacted, size-capped span (see Redaction.ts).
 */
export const TracingLive = (options: { readonly serviceName: string; readonly otlpEndpoint?: string | undefined }) =>
  NodeSdk.layer(Effect.map(TraceStore, (store) => ({
    resource: { serviceName: options.serviceName, serviceVersion: "1.0.0" },
    spanProcessor: sanitizingProcessor([
      store.processor,
      ...(options.otlpEndpoint
        ? [
          new BatchSpanProcessor(
            new OTLPTraceExporter({ url: `${options.otlpEndpoint.replace(/\/$/, "")}/v1/traces` }),
            { scheduledDelayMillis: 500 }
          )
        ]
        : [])
    ])
  })))
