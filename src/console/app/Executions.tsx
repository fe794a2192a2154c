import { useState } from "preact/hooks"
import { api, query } from "./api.js"
import { useLoad } from "./load.js"
import { navigate } from "./route.js"
import type { ExecutionRecord, ExecutionStatus, WorkflowSummary } from "./types.js"

const STATUSES: ReadonlyArray<ExecutionStatus> = ["running", "suspended", "completed", "error", "cancelled"]
const LIMIT = 20
/** The filter for executions waiting for a concurrency slot (issue #33): `running` to the API, with `waiting`. */
const QUEUED = "queued"

/** Past and present executions, newest first, filtered by status (or waiting for a slot) and workflow, page by page. */
export const Executions = (
  props: { workflows: ReadonlyArray<WorkflowSummary>; initialWorkflow: string | undefined }
) => {
  const [workflowId, setWorkflowId] = useState(props.initialWorkflow ?? "")
  const [status, setStatus] = useState("")
  const [offset, setOffset] = useState(0)
  const executions = useLoad(
    () =>
      api<ReadonlyArray<ExecutionRecord>>(
        `/workflows/executions${
          query(
            status === QUEUED
              ? { workflowId, waiting: "concurrency", limit: LIMIT, offset }
              : { workflowId, status, limit: LIMIT, offset }
          )
        }`
      ),
    [workflowId, status, offset]
  )
  const rows = executions.data ?? []
  return (
    <section aria-labelledby="executions-heading" class="executions">
      <div class="row">
        <h3 id="executions-heading">Executions</h3>
        <button type="button" onClick={executions.reload}>Refresh</button>
      </div>
      <div class="row filters">
        <label>
          Workflow
          <select value={workflowId} onChange={(event) => (setWorkflowId(event.currentTarget.value), setOffset(0))}>
            <option value="">all</option>
            {props.workflows.map((workflow) => <option key={workflow.id} value={workflow.id}>{workflow.id}</option>)}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(event) => (setStatus(event.currentTarget.value), setOffset(0))}>
            <option value="">all</option>
            {STATUSES.map((status) => <option key={status} value={status}>{status}</option>)}
            <option value={QUEUED}>queued (waiting for a slot)</option>
          </select>
        </label>
      </div>
      {executions.error !== undefined && <p role="alert" class="error">{executions.error}</p>}
      <table>
        <thead>
          <tr>
            <th>Execution</th>
            <th>Workflow</th>
            <th>Status</th>
            <th>Created</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((execution) => (
            <tr
              key={execution.id}
              data-testid="execution-row"
              tabIndex={0}
              class="clickable"
              onClick={() => navigate("workflows", execution.workflowId, "executions", execution.id)}
              onKeyDown={(event) => {
                if (event.key === "Enter") navigate("workflows", execution.workflowId, "executions", execution.id)
              }}
            >
              <td>
                <code>{execution.id}</code>
              </td>
              <td>{execution.workflowId}</td>
              <td>
                <span class={`status ${execution.status}`}>{execution.status}</span>
                {execution.waiting === "concurrency" && (
                  <span class="badge" data-testid="execution-queued">
                    queued{execution.queuedAt === undefined
                      ? ""
                      : ` since ${new Date(execution.queuedAt).toLocaleTimeString()}`}
                  </span>
                )}
              </td>
              <td>{new Date(execution.createdAt).toLocaleString()}</td>
              <td>{new Date(execution.updatedAt).toLocaleString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pages" aria-label="Execution pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - LIMIT))}>
          Previous
        </button>
        <span>{rows.length === 0 ? "none" : `${offset + 1}–${offset + rows.length}`}</span>
        <button type="button" disabled={rows.length < LIMIT} onClick={() => setOffset(offset + LIMIT)}>Next</button>
      </nav>
    </section>
  )
}
