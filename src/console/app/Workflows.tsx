import { api, segment } from "./api.js"
import { Execution } from "./Execution.js"
import { Executions } from "./Executions.js"
import { useLoad } from "./load.js"
import { href, navigate } from "./route.js"
import { SchemaForm } from "./SchemaForm.js"
import type { RunStarted, WorkflowDetails, WorkflowSummary } from "./types.js"

const Details = ({ id }: { id: string }) => {
  const details = useLoad(() => api<WorkflowDetails>(`/workflows/${segment(id)}`), [id])
  if (details.error !== undefined) return <p role="alert" class="error">{details.error}</p>
  const workflow = details.data
  if (workflow === undefined) return <p class="meta">Loading…</p>
  return (
    <section aria-labelledby="workflow-heading" class="detail">
      <h2 id="workflow-heading">
        {workflow.name} <code>{workflow.id}</code>
      </h2>
      <p class="meta">
        {workflow.purpose} · <a href={href("traces", "by", "workflow", workflow.id)}>its traces</a>
      </p>
      <ol class="steps">
        {workflow.steps.map((step) => (
          <li key={step.id}>
            <code>{step.id}</code> <span class="badge">{step.type}</span> <span class="meta">{step.purpose}</span>
            {step.resumeSchema !== undefined && <span class="badge">may suspend</span>}
          </li>
        ))}
      </ol>
      <h3>Run</h3>
      <SchemaForm
        key={workflow.id}
        name="run"
        schema={workflow.inputSchema}
        testId="workflow-input"
        submitTestId="workflow-run"
        submitLabel="Run"
        prefill
        onSubmit={async (input) => {
          const started = await api<RunStarted>(`/workflows/${segment(workflow.id)}/run`, {
            method: "POST",
            body: { input }
          })
          navigate("workflows", workflow.id, "executions", started.executionId)
        }}
      />
    </section>
  )
}

/** The workflows; for the chosen one its steps and a run form; the executions table; one execution. */
export const Workflows = ({ path }: { path: ReadonlyArray<string> }) => {
  const workflows = useLoad(() => api<ReadonlyArray<WorkflowSummary>>("/workflows"), [])
  const [chosen, section, executionId] = path
  return (
    <div class="split">
      <section aria-labelledby="workflows-heading" class="list">
        <h1 id="workflows-heading">Workflows</h1>
        {workflows.error !== undefined && <p role="alert" class="error">{workflows.error}</p>}
        <ul>
          {workflows.data?.map((workflow) => (
            <li key={workflow.id}>
              <a
                href={href("workflows", workflow.id)}
                data-testid="workflow-item"
                class="item"
                aria-current={workflow.id === chosen ? "true" : undefined}
              >
                <strong>{workflow.name}</strong> <code>{workflow.id}</code>
                <span class="meta">{workflow.stepsCount} steps · {workflow.status}</span>
              </a>
            </li>
          ))}
        </ul>
      </section>
      <div class="detail">
        {chosen !== undefined && section === "executions" && executionId !== undefined
          ? <Execution key={executionId} workflowId={chosen} executionId={executionId} />
          : (
            <>
              {chosen !== undefined && <Details id={chosen} />}
              <Executions workflows={workflows.data ?? []} initialWorkflow={chosen} />
            </>
          )}
      </div>
    </div>
  )
}
