import type { Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"

const SERVER = 1

/**
 * Names each HTTP server span `<METHOD> <route template>` (OpenTelemetry HTTP semantic conventions,
 * e.g. `GET /agents/:id`) as it ends. The span starts before the router has matched (its name then is
 * the method alone, what a request no route matches keeps); the router sets `http.route` on it. Renamed
 * in `onEnding`, while the span can still change, so every processor and exporter sees the final name.
 */
export const serverSpanNames: SpanProcessor = {
  onStart: () => {},
  onEnding: (span: Span) => {
    if (span.kind !== SERVER) return
    const route = span.attributes["http.route"]
    const method = span.attributes["http.request.method"]
    if (typeof route === "string" && route !== "" && typeof method === "string") span.updateName(`${method} ${route}`)
  },
  onEnd: () => {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve()
}
