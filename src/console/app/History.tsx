import { useState } from "preact/hooks"
import { messageOf } from "../../core/errorMessages.js"
import { api, query, segment } from "./api.js"
import { useLoad } from "./load.js"
import { messageText } from "./messageText.js"
import { navigate } from "./route.js"
import type { HistoryEntry, HistoryPage, TraceSummary } from "./types.js"

const LIMIT = 10

/**
 * The trace of an agent call: the agent's trace that was open when the call started (history entries
 * do not carry their trace id).
 */
const traceOf = async (agentId: string, entry: HistoryEntry) => {
  const { traces } = await api<{ traces: ReadonlyArray<TraceSummary> }>(
    `/observability/traces${query({ entityType: "agent", entityId: agentId, limit: 500 })}`
  )
  const start = Date.parse(entry.startTime)
  return traces.find((trace) => Date.parse(trace.startTime) <= start && start <= Date.parse(trace.endTime))
}

/** The agent's past calls, newest first, page by page. */
export const History = ({ agentId }: { agentId: string }) => {
  const [page, setPage] = useState(0)
  const [traceError, setTraceError] = useState<string | undefined>(undefined)
  const history = useLoad(
    () => api<HistoryPage>(`/agents/${segment(agentId)}/history${query({ page, limit: LIMIT })}`),
    [agentId, page]
  )
  const openTrace = (entry: HistoryEntry) => {
    setTraceError(undefined)
    traceOf(agentId, entry).then(
      (
        trace
      ) => (trace === undefined
        ? setTraceError("No stored trace covers this call")
        : navigate("traces", trace.traceId)),
      (error: unknown) => setTraceError(messageOf(error))
    )
  }
  const pagination = history.data?.pagination
  return (
    <div class="history">
      {history.error !== undefined && <p role="alert" class="error">{history.error}</p>}
      {traceError !== undefined && <p role="alert" class="error">{traceError}</p>}
      <table class="history-table">
        <colgroup>
          <col class="when" />
          <col class="status" />
          <col class="conversation" />
          <col />
          <col />
          <col class="tools" />
          <col class="open" />
        </colgroup>
        <thead>
          <tr>
            <th>Started</th>
            <th>Status</th>
            <th>Conversation</th>
            <th>Input</th>
            <th>Output</th>
            <th>Tools</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {history.data?.entries.map((entry) => {
            const input = messageText(entry.input)
            return (
              <tr key={entry.id} data-testid="history-row">
                <td>{new Date(entry.startTime).toLocaleString()}</td>
                <td>
                  {entry.status === "blocked"
                    ? (
                      <span class="badge blocked" data-testid="history-blocked" title="a guardrail refused this call">
                        blocked
                      </span>
                    )
                    : entry.status}
                  {entry.model !== undefined && (
                    <span class="meta" data-testid="history-model" title="the model that answered">
                      {" "}
                      {entry.model.modelId}
                    </span>
                  )}
                </td>
                <td class="clip" title={entry.conversationId ?? undefined}>
                  <code>{entry.conversationId ?? "—"}</code>
                </td>
                <td class="clip" title={input} data-testid="history-input">{input}</td>
                <td class="clip" title={entry.output ?? undefined}>{entry.output ?? "—"}</td>
                <td data-testid="history-tools">
                  {entry.toolCalls.length === 0 ? "—" : (
                    <ul class="tool-names">
                      {entry.toolCalls.map((call) => (
                        <li key={call.toolCallId} title={`${call.toolName}(${JSON.stringify(call.args)})`}>
                          {call.toolName}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>
                  <button type="button" onClick={() => openTrace(entry)}>Trace</button>
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
      {pagination !== undefined && (
        <nav class="pages" aria-label="History pages">
          <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>Previous</button>
          <span>page {pagination.page + 1} of {Math.max(pagination.totalPages, 1)} ({pagination.total} calls)</span>
          <button type="button" disabled={page + 1 >= pagination.totalPages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </nav>
      )}
    </div>
  )
}
