import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as OtelResource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Tracer } from "effect"
import { serviceInfo } from "../core/serviceInfo.js"
import { MetricsLive } from "./metrics/MetricsLive.js"
import { spanMetricsProcessor } from "./metrics/spanMetrics.js"
import { exportsOf } from "./moduleExports.js"
import { OtlpLogsLive } from "./OtlpLogs.js"
import { otlpUrl } from "./otlpUrl.js"
import { sanitizingProcessor } from "./SanitizingSpanProcessor.js"
import { serverSpanNames } from "./serverSpanNames.js"
import { TraceStore } from "./TraceStore.js"

// The OTLP exporter is loaded only when an endpoint is configured.
const otlpProcessor = (endpoint: string) =>
  Effect.map(Effect.promise(() => import("@opentelemetry/exporter-trace-otlp-http")), (module) => {
    const { OTLPTraceExporter } = exportsOf(module)
    return new BatchSpanProcessor(
      new OTLPTraceExporter({ url: otlpUrl(endpoint, "traces") }),
      { scheduledDelayMillis: 500 }
    )
  })

/**
 * @effect/opentelemetry's tracer without its per-fiber context hook. The hook makes each span the
 * active OpenTelemetry context around every fiber step, for libraries that read
 * `context.active()`; the tracer provider is not registered globally and no context manager is
 * installed, so nothing can read it, and building those contexts cost about a tenth of a simple GET.
 * Spans are created, parented and processed exactly as before.
 */
const effectTracerLive = Layer.unwrapEffect(
  Effect.map(
    OtelTracer.make,
    (tracer) => Layer.setTracer(Tracer.make({ span: tracer.span, context: (execution) => execution() }))
  )
)

/**
 * Effect's tracer backed by OpenTelemetry: every span goes to the TraceStore and, when
 * `otlpEndpoint` (OTEL_EXPORTER_OTLP_ENDPOINT) is set, to that OTLP/HTTP collector too. Both see only
 * the redacted, size-capped span (see Redaction.ts). Also the service's metrics (MetricsLive): over
 * OTLP to the same collector, and for GET /metrics; and with an endpoint, its log entries (OtlpLogsLive).
 */
export const TracingLive = (options: {
  readonly serviceName: string
  /** The resource's `service.instance.id`: which of the instances sharing a store made the span. */
  readonly instanceId: string
  readonly otlpEndpoint?: string | undefined
  readonly metricExportIntervalMs?: number | undefined
}) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const store = yield* TraceStore
    const exporters = options.otlpEndpoint ? [yield* otlpProcessor(options.otlpEndpoint)] : []
    const processor = sanitizingProcessor([store.processor, ...exporters])
    const logs = options.otlpEndpoint
      ? OtlpLogsLive({ endpoint: options.otlpEndpoint, serviceName: options.serviceName })
      : Layer.empty
    return Layer.mergeAll(
      effectTracerLive,
      MetricsLive({ otlpEndpoint: options.otlpEndpoint, exportIntervalMs: options.metricExportIntervalMs }),
      logs
    ).pipe(
      Layer.provideMerge(OtelTracer.layerTracer),
      // HTTP and token metrics are read off the raw spans as they end (see spanMetrics.ts).
      Layer.provideMerge(NodeSdk.layerTracerProvider([serverSpanNames, spanMetricsProcessor, processor])),
      // As NodeSdk.layer builds it: OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, then ours.
      Layer.provideMerge(OtelResource.layerFromEnv(
        OtelResource.configToAttributes({
          serviceName: options.serviceName,
          serviceVersion: serviceInfo.version,
          attributes: { "service.instance.id": options.instanceId }
        })
      ))
    )
  }))
