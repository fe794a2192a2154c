import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import * as Schema from "effect/Schema"

export const SpanRecord = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.NullOr(Schema.String),
  name: Schema.String,
  kind: Schema.String,
  startTime: Schema.String,
  endTime: Schema.NullOr(Schema.String),
  durationMs: Schema.NullOr(Schema.Number),
  status: Schema.Struct({ code: Schema.String, message: Schema.optional(Schema.String) }),
  attributes: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  events: Schema.Array(Schema.Struct({
    name: Schema.String,
    time: Schema.String,
    attributes: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  }))
}).annotations({ identifier: "Span" })
export type SpanRecord = typeof SpanRecord.Type

const KINDS = ["internal", "server", "client", "producer", "consumer"]
const STATUS = ["unset", "ok", "error"]

// Every span needs two or three of these: the part before the milliseconds is formatted once per second.
let prefixSecond = Number.NaN
let prefix = ""
const isoOf = (time: readonly [number, number]): string => {
  const [seconds, nanos] = time
  if (seconds !== prefixSecond) {
    prefixSecond = seconds
    prefix = new Date(seconds * 1000).toISOString().slice(0, 20)
  }
  const millis = Math.floor(nanos / 1e6)
  return `${prefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`
}
const msOf = (time: readonly [number, number]) => time[0] * 1000 + time[1] / 1e6

/**
 * An OpenTelemetry span as stored and served (times ISO 8601). Processors receive spans already
 * redacted and capped (SanitizingSpanProcessor), so this only changes the shape.
 */
export const toSpanRecord = (span: ReadableSpan, ended: boolean): SpanRecord => ({
  traceId: span.spanContext().traceId,
  spanId: span.spanContext().spanId,
  parentSpanId: span.parentSpanContext?.spanId ?? null,
  name: span.name,
  kind: KINDS[span.kind] ?? "internal",
  startTime: isoOf(span.startTime),
  endTime: ended ? isoOf(span.endTime) : null,
  durationMs: ended ? Math.max(0, msOf(span.endTime) - msOf(span.startTime)) : null,
  status: {
    code: STATUS[span.status.code] ?? "unset",
    ...(span.status.message ? { message: span.status.message } : {})
  },
  attributes: span.attributes as Record<string, unknown>,
  events: span.events.map((event) => ({
    name: event.name,
    time: isoOf(event.time),
    attributes: (event.attributes ?? {}) as Record<string, unknown>
  }))
})

/** The entity a span is about, from the attributes agents and workflows put on their spans. */
export const entityOf = (span: SpanRecord): { readonly type: string; readonly id: string } | undefined => {
  const type = span.attributes["entity.type"]
  const id = span.attributes["entity.id"]
  return typeof type === "string" && typeof id === "string" ? { type, id } : undefined
}
