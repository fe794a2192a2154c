import * as Metrics from "@effect/opentelemetry/Metrics"
import type { MetricProducer } from "@opentelemetry/sdk-metrics"
import { Context, Effect, Layer, Schedule, Scope } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { exportsOf } from "../moduleExports.js"
import { otlpUrl } from "../otlpUrl.js"
import { recordEventLoopDelay } from "./instruments.js"

/** The metrics in the Prometheus text format, for GET /metrics. */
export class MetricsExposition extends Context.Tag("MetricsExposition")<MetricsExposition, {
  readonly prometheus: Effect.Effect<string>
}>() {}

const EVENT_LOOP_SAMPLE = "5 seconds"
const DEFAULT_EXPORT_INTERVAL_MS = 60_000

// The exporters are loaded only when used: OTLP when an endpoint is configured, Prometheus on the first scrape.
const otlpReader = (endpoint: string, intervalMs: number) =>
  Effect.promise(async () => {
    const [otlp, sdk] = await Promise.all([
      import("@opentelemetry/exporter-metrics-otlp-http"),
      import("@opentelemetry/sdk-metrics")
    ])
    const { OTLPMetricExporter } = exportsOf(otlp)
    const { PeriodicExportingMetricReader } = exportsOf(sdk)
    return new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({ url: otlpUrl(endpoint, "metrics") }),
      exportIntervalMillis: intervalMs
    })
  })

const prometheusScraper = (producer: MetricProducer) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const { PrometheusExporter, PrometheusSerializer } = exportsOf(await import("@opentelemetry/exporter-prometheus"))
      const reader = new PrometheusExporter({ preventServerStart: true })
      reader.setMetricProducer(producer)
      const serializer = new PrometheusSerializer()
      return { reader, serialize: async () => serializer.serialize((await reader.collect()).resourceMetrics) }
    }),
    ({ reader }) => Effect.promise(() => reader.shutdown().catch(() => undefined))
  )

/**
 * The service's Effect metrics (instruments.ts) bridged to OpenTelemetry by @effect/opentelemetry's
 * metric producer: pushed over OTLP/HTTP (`{otlpEndpoint}/v1/metrics`, every
 * OTEL_METRIC_EXPORT_INTERVAL ms, 60 s by default) when an endpoint is configured, and scraped in the
 * Prometheus text format at GET /metrics. Both read the same cumulative values, so a reader made late
 * (the Prometheus one, on the first scrape) misses nothing. Also samples the event loop's delay.
 */
export const MetricsLive = (options: {
  readonly otlpEndpoint?: string | undefined
  readonly exportIntervalMs?: number | undefined
}) =>
  Layer.scoped(
    MetricsExposition,
    Effect.gen(function*() {
      const producer = yield* Metrics.makeProducer
      if (options.otlpEndpoint) {
        const reader = yield* otlpReader(options.otlpEndpoint, options.exportIntervalMs ?? DEFAULT_EXPORT_INTERVAL_MS)
        yield* Metrics.registerProducer(producer, () => reader)
      }

      const delay = monitorEventLoopDelay({ resolution: 20 })
      yield* Effect.acquireRelease(Effect.sync(() => delay.enable()), () => Effect.sync(() => delay.disable()))
      // Sampled at once (the gauges exist from the start) and then every few seconds.
      yield* Effect.suspend(() => {
        const toSeconds = (nanos: number) => (delay.count > 0 && Number.isFinite(nanos) ? nanos / 1e9 : 0)
        const statistics = {
          min: toSeconds(delay.min),
          max: toSeconds(delay.max),
          mean: toSeconds(delay.mean),
          p50: toSeconds(delay.percentile(50)),
          p90: toSeconds(delay.percentile(90)),
          p99: toSeconds(delay.percentile(99))
        }
        delay.reset()
        return recordEventLoopDelay(statistics)
      }).pipe(
        Effect.repeat(Schedule.spaced(EVENT_LOOP_SAMPLE)),
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )

      const scope = yield* Effect.scope
      const scraper = yield* Effect.cached(Effect.provideService(prometheusScraper(producer), Scope.Scope, scope))
      return MetricsExposition.of({
        prometheus: Effect.flatMap(scraper, ({ serialize }) => Effect.promise(serialize))
      })
    })
  )
