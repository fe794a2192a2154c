import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type OtlpReceived, otlpReceiver } from "./support/otlpReceiver.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually, timersApp } from "./support/timers.js"

/** Durable timers (issue #31, settled 17) as an OpenTelemetry backend receives them: the wake's root span, linked to the start. */

class Otlp extends Context.Tag("test/TimersOtlp")<Otlp, OtlpReceived>() {}

const Served = Layer.unwrapScoped(Effect.map(otlpReceiver, (received) =>
  Layer.merge(
    TestServerLive({ app: timersApp, config: { otlpEndpoint: received.url, metricExportIntervalMs: 300 } }),
    Layer.succeed(Otlp, received)
  )))

const spansOf = (bodies: ReadonlyArray<any>): Array<any> =>
  bodies.flatMap((body) =>
    (body.resourceSpans ?? []).flatMap((resource: any) =>
      (resource.scopeSpans ?? []).flatMap((scope: any) => scope.spans ?? [])
    )
  )

const metricNamesOf = (bodies: ReadonlyArray<any>): Set<string> =>
  new Set(
    bodies.flatMap((body) =>
      (body.resourceMetrics ?? []).flatMap((resource: any) =>
        (resource.scopeMetrics ?? []).flatMap((scope: any) => (scope.metrics ?? []).map((metric: any) => metric.name))
      )
    )
  )

layer(Served, { excludeTestServices: true })("durable timers in OTLP", (it) => {
  it.effect(
    "a wake is a root span `workflow.wake <id>` linked to the span the execution was started under; the timer metrics are exported",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const otlp = yield* Otlp
        const started = yield* fetchJson(
          `${url}/workflows/until/run`,
          json({
            input: { at: new Date(Date.now() + 2000).toISOString() },
            options: { executionId: "otel-wake" }
          })
        )
        expect(started.status).toBe(201)
        const wake = yield* eventually(
          Effect.sync(() => spansOf(otlp.traces).find((span) => span.name === "workflow.wake until")),
          (span) => span !== undefined,
          "the wake span exported"
        )
        expect(wake.parentSpanId ?? "").toBe("")
        const record = yield* fetchJson(`${url}/workflows/executions/otel-wake`)
        const { spanId, traceId } = record.body.data.metadata
        expect(traceId).not.toBe("")
        expect(wake.traceId).not.toBe(traceId)
        expect(wake.links).toEqual([expect.objectContaining({ traceId, spanId })])
        const attributes = Object.fromEntries(wake.attributes.map((a: any) => [a.key, a.value.stringValue]))
        expect(attributes).toMatchObject({
          "entity.type": "workflow",
          "entity.id": "until",
          "execution.id": "otel-wake"
        })
        // The continuation runs under it: the sleep step's span is in the wake's trace.
        yield* eventually(
          Effect.sync(() =>
            spansOf(otlp.traces).filter((span) => span.traceId === wake.traceId).map((span) => span.name)
          ),
          (names) => names.includes("workflow.step"),
          "the continuation in the wake's trace"
        )
        yield* eventually(
          Effect.sync(() => metricNamesOf(otlp.metrics)),
          (names) => names.has("workflow.timers.parked") && names.has("workflow.timer.lateness"),
          "the timer metrics exported"
        )
      }),
    40_000
  )
})
