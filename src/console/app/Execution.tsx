import { useEffect, useRef, useState } from "preact/hooks"
import { messageOf } from "../../core/errorMessages.js"
import { api, failure, query, segment, send } from "./api.js"
import { credentialsEpoch } from "./credentials.js"
import { Json } from "./Json.js"
import { useLoad } from "./load.js"
import { href, navigate } from "./route.js"
import { SchemaForm } from "./SchemaForm.js"
import { readSse } from "./sse.js"
import { useStore } from "./store.js"
import type { ExecutionState, LogEntry, RunStarted, WorkflowDetails, WorkflowFrame } from "./types.js"
import { WebhookDeliveries } from "./WebhookDeliveries.js"

const ACTIVE = new Set(["running", "suspended"])

/** An inner step's path (`measure/upper`, `lines[3]`), or undefined for a top-level step's event. */
const pathOf = (event: WorkflowFrame) => ("path" in event ? event.path : undefined)

/** How deep an event's step is: 0 at the top, one more per `/` or `[n]` of its path. */
const depthOf = (event: WorkflowFrame) => (pathOf(event)?.match(/[/[]/g) ?? []).length

/** Each step-complete's duration, from the step-start of the same step (or inner path) before it. */
const durations = (events: ReadonlyArray<WorkflowFrame>) => {
  const started = new Map<string, number>()
  return events.map((event) => {
    if (!("from" in event)) return undefined
    const key = pathOf(event) ?? event.from
    if (event.type === "step-start") started.set(key, Date.parse(event.timestamp))
    if ((event.type === "step-complete" || event.type === "workflow-suspended") && started.has(key)) {
      return Date.parse(event.timestamp) - started.get(key)!
    }
    return undefined
  })
}

const FINISHED = new Set(["completed", "error", "cancelled"])

/**
 * The top-level step an event is the first of (its step-start, or a replay's copied step-complete):
 * where a "Replay from here" button goes. Undefined for every other event.
 */
const replayPoints = (events: ReadonlyArray<WorkflowFrame>) => {
  const seen = new Set<string>()
  return events.map((event) => {
    if (!("from" in event) || pathOf(event) !== undefined) return undefined
    if (event.type !== "step-start" && !(event.type === "step-complete" && event.status === "copied")) return undefined
    if (seen.has(event.from)) return undefined
    seen.add(event.from)
    return event.from
  })
}

const EventItem = (
  { event, duration, onReplay }: {
    event: WorkflowFrame
    duration: number | undefined
    onReplay?: (() => void) | undefined
  }
) => (
  <li
    data-testid="execution-event"
    data-type={event.type}
    data-path={pathOf(event)}
    class={`event ${event.type}`}
    style={depthOf(event) > 0 ? { marginLeft: `${1.5 * depthOf(event)}em` } : undefined}
  >
    <span class="meta">{"timestamp" in event ? new Date(event.timestamp).toLocaleTimeString() : ""}</span>
    <strong>{event.type}</strong>
    {"from" in event && <code>{pathOf(event) ?? event.from}</code>}
    {event.type === "workflow-result" && <span class={`status ${event.status}`}>{event.status}</span>}
    {duration !== undefined && <span class="badge">{duration} ms</span>}
    {event.type === "step-retry" && (
      <span class="badge">attempt {event.attempt} failed, next in {event.delayMs} ms</span>
    )}
    {"reason" in event && event.reason !== undefined && <span class="reason">reason: {event.reason}</span>}
    {"wakeAt" in event && event.wakeAt !== undefined && (
      <span class="reason">wakes at {new Date(event.wakeAt).toLocaleString()}</span>
    )}
    {event.type === "workflow-result" && event.suspension != null && (
      <span class="reason">reason: {event.suspension.reason}</span>
    )}
    {"error" in event && event.error !== undefined && <span class="error">{event.error}</span>}
    {"input" in event && event.input !== undefined && (
      <details>
        <summary>input</summary>
        <Json value={event.input} />
      </details>
    )}
    {"output" in event && event.output !== undefined && (
      <details>
        <summary>output</summary>
        <Json value={event.output} />
      </details>
    )}
    {event.type === "workflow-result" && event.result !== undefined && event.result !== null && (
      <details open>
        <summary>result</summary>
        <Json value={event.result} />
      </details>
    )}
    {onReplay !== undefined && (
      <button type="button" data-testid="replay-from" onClick={onReplay}>Replay from here</button>
    )}
  </li>
)

/**
 * One execution: its events replayed and followed over its SSE stream (re-attached after each action,
 * from the last event seen), its state, the forms to resume it and the buttons to suspend or cancel it.
 */
export const Execution = ({ workflowId, executionId }: { workflowId: string; executionId: string }) => {
  const base = `/workflows/${segment(workflowId)}/executions/${segment(executionId)}`
  const [events, setEvents] = useState<ReadonlyArray<WorkflowFrame>>([])
  const [state, setState] = useState<ExecutionState | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [attachments, setAttachments] = useState(0)
  const lastId = useRef<string | undefined>(undefined)
  const asleep = useRef(false)
  const epoch = useStore(credentialsEpoch)
  const workflow = useLoad(() => api<WorkflowDetails>(`/workflows/${segment(workflowId)}`), [workflowId])
  const traces = useLoad(
    () =>
      api<ReadonlyArray<LogEntry>>(`/api/logs${query({ executionId, limit: 200 })}`)
        .then((logs) => [...new Set(logs.flatMap((log) => (log.traceId === undefined ? [] : [log.traceId])))]),
    [executionId, state?.status]
  )

  // Only the newest request's answer is kept: an older one may arrive after it and is stale.
  const requests = useRef(0)
  const refresh = () => {
    const request = ++requests.current
    return api<ExecutionState>(`${base}/state`).then(
      (state) => request === requests.current && setState(state),
      (error: unknown) => request === requests.current && setError(messageOf(error))
    )
  }

  useEffect(() => {
    const abort = new AbortController()
    void refresh()
    const follow = async () => {
      const response = await send(`${base}/stream${query({ after: lastId.current })}`, { signal: abort.signal })
      if (!response.ok || response.body === null) throw await failure(response)
      await readSse(response.body, ({ data, id }) => {
        const frame = data as WorkflowFrame
        // The closing workflow-result is not an event of the log: its id is not where a re-attach resumes.
        if (id !== undefined && frame.type !== "workflow-result") lastId.current = id
        setEvents((events) => [...events, frame])
        // The state shows a sleeper's wake time: read again when it parks and when it wakes.
        if (frame.type === "workflow-result" || frame.type === "step-sleep" || asleep.current) void refresh()
        asleep.current = frame.type === "step-sleep"
      }, abort.signal)
    }
    follow().then(() => refresh(), (error: unknown) => {
      if (!abort.signal.aborted) setError(messageOf(error))
    })
    return () => abort.abort()
  }, [base, attachments, epoch])

  const act = (action: string, body: unknown) =>
    api(`${base}/${action}`, { method: "POST", body }).then(
      () => {
        setError(undefined)
        return refresh().then(() => setAttachments((count) => count + 1))
      },
      (error: unknown) => setError(messageOf(error))
    )

  /** Replay (issue #33: a new execution, not the stream's replay of events) or restart, then open the new execution. */
  const replay = (action: "replay" | "restart", body: unknown) =>
    api<RunStarted>(`${base}/${action}`, { method: "POST", body }).then(
      (started) => navigate("workflows", workflowId, "executions", started.executionId),
      (error: unknown) => setError(messageOf(error))
    )

  const status = state?.status ?? "loading"
  const finished = FINISHED.has(status)
  const replayAt = replayPoints(events)
  // A suspension inside a step names its path (`notify/send`, `lines[3]`): its top-level step is before the first separator.
  const step = workflow.data?.steps.find((step) => step.id === state?.suspension?.stepId.split(/[[/#]/, 1)[0])
  const resumeSchema = step?.resumeSchema ?? workflow.data?.resumeSchema ?? {}
  const durationOf = durations(events)
  return (
    <section aria-labelledby="execution-heading" class="execution">
      <p>
        <a href={href("workflows", workflowId)}>← {workflowId}</a>
      </p>
      <h2 id="execution-heading">
        Execution <code>{executionId}</code>
      </h2>
      <div class="row">
        <span>
          Status: <strong data-testid="execution-status" class={`status ${status}`}>{status}</strong>
        </span>
        {state?.waiting === "concurrency" && (
          <span data-testid="execution-waiting" class="reason">
            queued for a concurrency slot{state.queuedAt === undefined
              ? ""
              : ` since ${new Date(state.queuedAt).toLocaleString()}`}
          </span>
        )}
        {state?.waitingUntil !== undefined && (
          <span data-testid="execution-waiting" class="reason">
            asleep until {new Date(state.waitingUntil).toLocaleString()}
          </span>
        )}
        {status === "running" && (
          <button
            type="button"
            onClick={() => void act("suspend", { reason: "suspended from the console" })}
          >
            Suspend
          </button>
        )}
        {ACTIVE.has(status) && (
          <button
            type="button"
            data-testid="execution-cancel"
            onClick={() => void act("cancel", { reason: "cancelled from the console" })}
          >
            Cancel
          </button>
        )}
        {status === "error" && (
          <button
            type="button"
            data-testid="execution-restart"
            onClick={() => void replay("restart", {})}
          >
            Restart from the failed step
          </button>
        )}
        {traces.data?.map((traceId, index) => (
          <a key={traceId} href={href("traces", traceId)} data-testid="execution-trace">trace {index + 1}</a>
        ))}
      </div>
      {error !== undefined && <p role="alert" class="error">{error}</p>}
      {state?.replayOf !== undefined && (
        <p data-testid="execution-replay-of">
          Replay of{" "}
          <a href={href("workflows", workflowId, "executions", state.replayOf.executionId)}>
            <code>{state.replayOf.executionId}</code>
          </a>{" "}
          from <code>{state.replayOf.fromStep}</code>
        </p>
      )}
      {state?.replays !== undefined && (
        <p data-testid="execution-replays">
          Replays:{" "}
          {state.replays.map((one) => (
            <a key={one.executionId} href={href("workflows", workflowId, "executions", one.executionId)}>
              <code>{one.executionId}</code> (from {one.fromStep}){" "}
            </a>
          ))}
        </p>
      )}
      {state?.suspension !== undefined && status === "suspended" && workflow.data !== undefined && (
        <div class="suspension">
          <p>
            Suspended at <code>{state.suspension.stepId}</code>: <span class="reason">{state.suspension.reason}</span>
          </p>
          {state.suspension.data !== undefined && (
            <pre class="json" data-testid="suspension-data">{JSON.stringify(state.suspension.data, null, 2)}</pre>
          )}
          <h3>Resume</h3>
          <SchemaForm
            key={`${state.suspension.stepId}-${state.suspension.suspendedAt}`}
            name="resume"
            schema={resumeSchema}
            testId="resume-input"
            submitTestId="resume-submit"
            submitLabel="Resume"
            onSubmit={(resumeData) => act("resume", { resumeData })}
          />
        </div>
      )}
      <WebhookDeliveries base={base} status={status} />
      <h3>Timeline</h3>
      <ol class="timeline" aria-live="polite">
        {events.map((event, index) => {
          const fromStep = replayAt[index]
          const onReplay = finished && fromStep !== undefined ? () => void replay("replay", { fromStep }) : undefined
          return <EventItem key={index} event={event} duration={durationOf[index]} onReplay={onReplay} />
        })}
      </ol>
      {state !== undefined && (
        <div class="state">
          <Json label="input" value={state.input} />
          {state.result !== undefined && <Json label="result" value={state.result} />}
          {state.error !== undefined && <p class="error">{state.error}</p>}
          <Json label="context" value={state.context} />
        </div>
      )}
    </section>
  )
}
