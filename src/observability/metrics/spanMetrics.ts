import type { Context as OtelContext } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { httpServerDuration, labelsFor, tokenUsage } from "./instruments.js"

const SERVER = 1
const CLIENT = 2
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"])

const seconds = (time: readonly [number, number]) => time[0] + time[1] / 1e9

const text = (value: unknown, otherwise: string) => typeof value === "string" && value !== "" ? value : otherwise

/**
 * Metrics read off spans as they end, so the request path pays nothing more than the span it already
 * has: every request's `http.server` span carries its method, route template (`http.route`, set by
 * the router; none for a path no route matches) and status; every model call's span its model and
 * token usage. Runs before the sanitizing processor (these attributes are never redacted).
 */
export const spanMetricsProcessor: SpanProcessor = {
  onStart: (_span: Span, _context: OtelContext) => {},
  onEnd: (span: ReadableSpan) => {
    if (span.kind === SERVER) {
      const attributes = span.attributes
      const method = text(attributes["http.request.method"], "_OTHER")
      const route = text(attributes["http.route"], "unmatched")
      const status = String(attributes["http.response.status_code"] ?? 0)
      const labels = labelsFor(`${method} ${route} ${status}`, () => [
        ["http.request.method", METHODS.has(method) ? method : "_OTHER"],
        ["http.route", route],
        ["http.response.status_code", status]
      ])
      httpServerDuration.unsafeUpdate(seconds(span.duration), labels)
    } else if (span.kind === CLIENT && span.attributes["gen_ai.operation.name"] === "chat") {
      const attributes = span.attributes
      const model = text(attributes["gen_ai.request.model"], "unknown")
      const provider = text(attributes["gen_ai.provider.name"], "unknown")
      for (const type of ["input", "output"] as const) {
        const count = attributes[`gen_ai.usage.${type}_tokens`]
        if (typeof count !== "number") continue
        tokenUsage.unsafeUpdate(
          count,
          labelsFor(`${type} ${provider} ${model}`, () => [
            ["gen_ai.operation.name", "chat"],
            ["gen_ai.provider.name", provider],
            ["gen_ai.request.model", model],
            ["gen_ai.token.type", type]
          ])
        )
      }
    }
  },
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve()
}
