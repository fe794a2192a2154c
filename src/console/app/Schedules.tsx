import { useState } from "preact/hooks"
import { api, query, segment } from "./api.js"
import { Json } from "./Json.js"
import { useLoad } from "./load.js"
import type { ScheduleSummary, ScheduleView } from "./types.js"

const when = (iso: string) => new Date(iso).toLocaleString()
const LIMIT = 20

/** One schedule as its own route gives it: the whole input and the next five fire times (lists carry neither). */
const ScheduleDetails = (props: { schedule: ScheduleSummary }) => {
  const { schedule } = props
  const details = useLoad(
    () => api<ScheduleView>(`/workflows/${segment(schedule.workflowId)}/schedules/${segment(schedule.id)}`),
    [schedule.workflowId, schedule.id, schedule.paused]
  )
  return (
    <div class="schedule-details" data-testid="schedule-details">
      <h3>{schedule.workflowId} / {schedule.name}</h3>
      {details.error !== undefined && <p role="alert" class="error">{details.error}</p>}
      {details.data !== undefined && (
        <>
          <p data-testid="schedule-times">
            {details.data.nextFireTimes.length === 0
              ? "paused: no next fire times"
              : `Next: ${details.data.nextFireTimes.map(when).join(", ")}`}
          </p>
          <Json label="Input" value={details.data.input} />
        </>
      )}
    </div>
  )
}

/** Every workflow schedule the caller may see (issue #33), page by page: its next fire time, pause and resume, and one's input. */
export const Schedules = () => {
  const [offset, setOffset] = useState(0)
  const [selected, setSelected] = useState<string | undefined>(undefined)
  const schedules = useLoad(() => api<ReadonlyArray<ScheduleSummary>>(`/schedules${query({ limit: LIMIT, offset })}`), [
    offset
  ])
  const [error, setError] = useState<string | undefined>(undefined)
  const toggle = async (schedule: ScheduleSummary) => {
    setError(undefined)
    try {
      await api(
        `/workflows/${segment(schedule.workflowId)}/schedules/${segment(schedule.id)}/${
          schedule.paused ? "resume" : "pause"
        }`,
        { method: "POST", body: {} }
      )
      schedules.reload()
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure))
    }
  }
  const rows = schedules.data ?? []
  const shown = rows.find((schedule) => schedule.id === selected)
  return (
    <section aria-labelledby="schedules-heading" class="schedules">
      <div class="row">
        <h2 id="schedules-heading">Schedules</h2>
        <button type="button" onClick={schedules.reload}>Refresh</button>
      </div>
      {schedules.error !== undefined && <p role="alert" class="error">{schedules.error}</p>}
      {error !== undefined && <p role="alert" class="error">{error}</p>}
      <table>
        <thead>
          <tr>
            <th>Workflow</th>
            <th>Name</th>
            <th>Cron</th>
            <th>Next fire time</th>
            <th>Last fired</th>
            <th>Failures</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          {rows.map((schedule) => (
            <tr key={schedule.id} data-testid="schedule-row">
              <td>{schedule.workflowId}</td>
              <td>{schedule.name}{schedule.source === "code" ? " (code)" : ""}</td>
              <td>
                <code>{schedule.cron}</code>
                {schedule.timezone === null ? "" : ` ${schedule.timezone}`}
              </td>
              <td data-testid="schedule-next">
                {schedule.nextFireAt === null
                  ? <span class="status suspended">paused</span>
                  : when(schedule.nextFireAt)}
              </td>
              <td>{schedule.lastFiredAt === null ? "never" : when(schedule.lastFiredAt)}</td>
              <td title={schedule.lastError ?? ""}>{schedule.failures}</td>
              <td>
                <button type="button" data-testid="schedule-toggle" onClick={() => void toggle(schedule)}>
                  {schedule.paused ? "Resume" : "Pause"}
                </button>
                <button
                  type="button"
                  data-testid="schedule-show"
                  aria-pressed={selected === schedule.id}
                  onClick={() => setSelected(selected === schedule.id ? undefined : schedule.id)}
                >
                  Input
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pages" aria-label="Schedule pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - LIMIT))}>
          Previous
        </button>
        <span>{rows.length === 0 ? "none" : `${offset + 1}–${offset + rows.length}`}</span>
        <button type="button" disabled={rows.length < LIMIT} onClick={() => setOffset(offset + LIMIT)}>Next</button>
      </nav>
      {shown !== undefined && <ScheduleDetails schedule={shown} />}
    </section>
  )
}
