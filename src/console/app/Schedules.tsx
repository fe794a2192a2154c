import { useState } from "preact/hooks"
import { api, segment } from "./api.js"
import { useLoad } from "./load.js"
import type { ScheduleView } from "./types.js"

const when = (iso: string) => new Date(iso).toLocaleString()

/** Every workflow schedule the caller may see (issue #33): its next fire times, pause and resume. */
export const Schedules = () => {
  const schedules = useLoad(() => api<ReadonlyArray<ScheduleView>>("/schedules"), [])
  const [error, setError] = useState<string | undefined>(undefined)
  const toggle = async (schedule: ScheduleView) => {
    setError(undefined)
    try {
      await api(`/workflows/${segment(schedule.workflowId)}/schedules/${segment(schedule.id)}/${schedule.paused ? "resume" : "pause"}`, { method: "POST", body: {} })
      schedules.reload()
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure))
    }
  }
  const rows = schedules.data ?? []
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
          <tr><th>Workflow</th><th>Name</th><th>Cron</th><th>Next fire times</th><th>Last fired</th><th>Failures</th><th></th></tr>
        </thead>
        <tbody>
          {rows.map((schedule) => (
            <tr key={schedule.id} data-testid="schedule-row">
              <td>{schedule.workflowId}</td>
              <td>{schedule.name}{schedule.source === "code" ? " (code)" : ""}</td>
              <td><code>{schedule.cron}</code>{schedule.timezone === null ? "" : ` ${schedule.timezone}`}</td>
              <td data-testid="schedule-next">{schedule.paused ? <span class="status suspended">paused</span> : schedule.nextFireTimes.slice(0, 3).map(when).join(", ")}</td>
              <td>{schedule.lastFiredAt === null ? "never" : when(schedule.lastFiredAt)}</td>
              <td title={schedule.lastError ?? ""}>{schedule.failures}</td>
              <td>
                <button type="button" data-testid="schedule-toggle" onClick={() => void toggle(schedule)}>
                  {schedule.paused ? "Resume" : "Pause"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
