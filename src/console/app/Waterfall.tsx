import { useState } from "preact/hooks"
import { api, segment } from "./api.js"
import { Json } from "./Json.js"
import { useLoad } from "./load.js"
import { href } from "./route.js"
import type { Span } from "./types.js"

interface Row {
  readonly span: Span
  readonly depth: number
}

/** Spans depth first, children by start time under their parent; a span whose parent is absent is a root. */
const nest = (spans: ReadonlyArray<Span>): ReadonlyArray<Row> => {
  const ids = new Set(spans.map((span) => span.spanId))
  const children = new Map<string | null, Array<Span>>()
  for (const span of spans) {
    const parent = span.parentSpanId !== null && ids.has(span.parentSpanId) ? span.parentSpanId : null
    children.set(parent, [...(children.get(parent) ?? []), span])
  }
  const rows: Array<Row> = []
  const visit = (parent: string | null, depth: number) => {
    const sorted = (children.get(parent) ?? []).sort((a, b) => Date.parse(a.startTime) - Date.parse(b.startTime))
    for (const span of sorted) {
      rows.push({ span, depth })
      visit(span.spanId, depth + 1)
    }
  }
  visit(null, 0)
  return rows
}

const endOf = (span: Span) => (span.endTime === null ? Date.now() : Date.parse(span.endTime))

/** A trace's spans as bars by start and duration, nested by parent; a span's attributes and events on click. */
export const Waterfall = ({ traceId }: { traceId: string }) => {
  const trace = useLoad(() => api<{ spans: ReadonlyArray<Span> }>(`/observability/traces/${segment(traceId)}`), [
    traceId
  ])
  const [selected, setSelected] = useState<string | undefined>(undefined)
  const spans = trace.data?.spans ?? []
  const rows = nest(spans)
  const start = Math.min(...spans.map((span) => Date.parse(span.startTime)))
  const total = Math.max(1, Math.max(...spans.map(endOf)) - start)
  const chosen = spans.find((span) => span.spanId === selected)
  return (
    <section aria-labelledby="trace-heading">
      <p>
        <a href={href("traces")}>← traces</a>
      </p>
      <h1 id="trace-heading">
        Trace <code>{traceId}</code>
      </h1>
      {trace.error !== undefined && <p role="alert" class="error">{trace.error}</p>}
      <p class="meta">{spans.length} spans over {total.toFixed(1)} ms</p>
      <ol class="waterfall">
        {rows.map(({ depth, span }) => {
          const offset = ((Date.parse(span.startTime) - start) / total) * 100
          const width = Math.max(0.4, ((endOf(span) - Date.parse(span.startTime)) / total) * 100)
          return (
            <li key={span.spanId} class={span.spanId === selected ? "selected" : ""}>
              <span class="span-name" style={{ paddingLeft: `${depth * 1.1}em` }}>{span.name}</span>
              <span class="lane">
                <button
                  type="button"
                  data-testid="span-bar"
                  class={`bar ${span.status.code}`}
                  style={{ marginLeft: `${offset}%`, width: `${width}%` }}
                  aria-pressed={span.spanId === selected}
                  aria-label={`${span.name}: ${span.durationMs?.toFixed(2) ?? "open"} ms`}
                  title={`${span.name}: ${span.durationMs?.toFixed(2) ?? "open"} ms`}
                  onClick={() => setSelected(span.spanId === selected ? undefined : span.spanId)}
                />
              </span>
              <span class="meta duration">
                {span.durationMs === null ? "open" : `${span.durationMs.toFixed(1)} ms`}
              </span>
            </li>
          )
        })}
      </ol>
      {chosen !== undefined && (
        <div class="span-detail" aria-live="polite">
          <h2>{chosen.name}</h2>
          <p class="meta">
            {chosen.kind} · status {chosen.status.code}
            {chosen.status.message !== undefined ? `: ${chosen.status.message}` : ""} · span{" "}
            <code>{chosen.spanId}</code>
          </p>
          <Json label="attributes" value={chosen.attributes} />
          <h3>Events</h3>
          {chosen.events.length === 0 ? <p class="meta">none</p> : (
            <ul>
              {chosen.events.map((event, index) => (
                <li key={index}>
                  <span class="meta">{event.time}</span> {event.name}
                  <Json value={event.attributes} />
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  )
}
