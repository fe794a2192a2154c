import type { Context as OtelContext, SpanStatus } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor, TimedEvent } from "@opentelemetry/sdk-trace-base"
import { type Budget, capString, jsonSize, recordedAttributes, redactQueries, SPAN_CAP, VALUE_CAP } from "./Redaction.js"

interface Recorded {
  readonly status: SpanStatus
  readonly attributes: Record<string, unknown>
  readonly events: Array<TimedEvent>
  readonly droppedAttributes: number
  readonly droppedEvents: number
}

/** A span's status, attributes and events as they may be recorded, within SPAN_CAP in all. */
const record = (span: ReadableSpan): Recorded => {
  const budget: Budget = { left: SPAN_CAP }
  const message = span.status.message === undefined ? undefined : capString(redactQueries(span.status.message))
  if (message !== undefined) budget.left -= jsonSize(message)
  const status = message === undefined ? span.status : { ...span.status, message }
  const { attributes, dropped: droppedAttributes } = recordedAttributes(span.attributes, budget)
  const events: Array<TimedEvent> = []
  let droppedEvents = 0
  let droppedEventAttributes = 0
  for (const event of span.events) {
    const name = capString(event.name, VALUE_CAP)
    const size = jsonSize(name) + 64
    if (size > budget.left) {
      droppedEvents++
      continue
    }
    budget.left -= size
    const recorded = recordedAttributes(event.attributes ?? {}, budget)
    droppedEventAttributes += recorded.dropped
    events.push({ ...event, name, attributes: recorded.attributes as TimedEvent["attributes"] })
  }
  return { status, attributes, events, droppedAttributes: droppedAttributes + droppedEventAttributes, droppedEvents }
}

/**
 * The span as processors may see it: the same span with its status, attributes and events replaced by
 * what may be recorded. A span still running is read when its reader asks (its attributes may change);
 * an ended one is worked out once.
 */
const recordedView = <S extends ReadableSpan>(span: S): S => {
  let ended: Recorded | undefined
  const current = () => ended ?? (span.ended ? (ended = record(span)) : record(span))
  return Object.create(span, {
    status: { get: () => current().status },
    attributes: { get: () => current().attributes },
    events: { get: () => current().events },
    droppedAttributesCount: { get: () => span.droppedAttributesCount + current().droppedAttributes },
    droppedEventsCount: { get: () => span.droppedEventsCount + current().droppedEvents }
  }) as S
}

/**
 * One processor in front of all the others (the store, the live feed, the OTLP exporter), so each of
 * them sees only the redacted and size-capped span.
 */
export const sanitizingProcessor = (processors: ReadonlyArray<SpanProcessor>): SpanProcessor => ({
  onStart: (span: Span, context: OtelContext) => {
    const view = recordedView(span)
    for (const processor of processors) processor.onStart(view, context)
  },
  onEnd: (span: ReadableSpan) => {
    const view = recordedView(span)
    for (const processor of processors) processor.onEnd(view)
  },
  forceFlush: () => Promise.all(processors.map((processor) => processor.forceFlush())).then(() => undefined),
  shutdown: () => Promise.all(processors.map((processor) => processor.shutdown())).then(() => undefined)
})
