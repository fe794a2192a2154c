import { useEffect, useState } from "preact/hooks"
import { api, query } from "./api.js"
import { useLoad } from "./load.js"
import { navigate } from "./route.js"
import type { TraceSummary } from "./types.js"
import { Waterfall } from "./Waterfall.js"

const LIMIT = 25

/**
 * Traces by entity, newest first (the filter is in the location, `#/traces/by/agent/assistant`, so that
 * an agent or a workflow links to its traces); a chosen trace (`#/traces/<traceId>`) as a waterfall.
 */
export const Traces = ({ path }: { path: ReadonlyArray<string> }) => {
  const filtered = path[0] === "by"
  const entityType = filtered && path[1] !== "any" ? path[1] ?? "" : ""
  const entityId = filtered ? path[2] ?? "" : ""
  // The id as typed: applied on Enter, on leaving the field, with Refresh or with a change of entity type.
  const [typedId, setTypedId] = useState(entityId)
  useEffect(() => setTypedId(entityId), [entityId])
  const setFilter = (type: string, id: string) => {
    setOffset(0)
    if (type === "" && id === "") navigate("traces")
    else navigate("traces", "by", type === "" ? "any" : type, ...(id === "" ? [] : [id]))
  }
  const [offset, setOffset] = useState(0)
  const traces = useLoad(
    () =>
      api<{ traces: ReadonlyArray<TraceSummary>; total: number }>(
        `/observability/traces${query({ entityType, entityId, limit: LIMIT, offset })}`
      ),
    [entityType, entityId, offset]
  )
  /** Reads the list again with the filter as the fields show it now. */
  const refresh = () => {
    if (typedId.trim() === entityId) traces.reload()
    else setFilter(entityType, typedId.trim())
  }
  if (path[0] !== undefined && !filtered) return <Waterfall key={path[0]} traceId={path[0]} />
  const rows = traces.data?.traces ?? []
  return (
    <section aria-labelledby="traces-heading">
      <h1 id="traces-heading">Traces</h1>
      <form class="row filters" onSubmit={(event) => (event.preventDefault(), refresh())}>
        <label>
          Entity
          <select value={entityType} onChange={(event) => setFilter(event.currentTarget.value, typedId.trim())}>
            <option value="">any</option>
            <option value="agent">agent</option>
            <option value="workflow">workflow</option>
          </select>
        </label>
        <label>
          Entity id
          <input
            value={typedId}
            onInput={(event) => setTypedId(event.currentTarget.value)}
            onChange={(event) => setFilter(entityType, event.currentTarget.value.trim())}
          />
        </label>
        <button type="button" onClick={refresh}>Refresh</button>
      </form>
      {traces.error !== undefined && <p role="alert" class="error">{traces.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Started</th>
            <th>Name</th>
            <th>Entity</th>
            <th>Duration</th>
            <th>Spans</th>
            <th>Status</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((trace) => (
            <tr
              key={trace.traceId}
              data-testid="trace-row"
              tabIndex={0}
              class="clickable"
              onClick={() => navigate("traces", trace.traceId)}
              onKeyDown={(event) => {
                if (event.key === "Enter") navigate("traces", trace.traceId)
              }}
            >
              <td>{new Date(trace.startTime).toLocaleString()}</td>
              <td>{trace.name}</td>
              <td>{trace.entityType === null ? "—" : `${trace.entityType} ${trace.entityId ?? ""}`}</td>
              <td>{trace.durationMs} ms</td>
              <td>{trace.spanCount}</td>
              <td>
                <span class={`status ${trace.status}`}>{trace.status}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pages" aria-label="Trace pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - LIMIT))}>
          Previous
        </button>
        <span>
          {rows.length === 0 ? "none" : `${offset + 1}–${offset + rows.length} of ${traces.data?.total ?? "?"}`}
        </span>
        <button
          type="button"
          disabled={offset + rows.length >= (traces.data?.total ?? 0)}
          onClick={() => setOffset(offset + LIMIT)}
        >
          Next
        </button>
      </nav>
    </section>
  )
}
