import { api } from "./api.js"
import { useLoad } from "./load.js"
import type { WebhookDelivery } from "./types.js"

/**
 * An execution's completion callbacks (issue #33 item 2): the outbox's rows, never events. Read again
 * when the execution's status changes (a suspension or an ending adds one) and on demand.
 */
export const WebhookDeliveries = ({ base, status }: { base: string; status: string }) => {
  const deliveries = useLoad(() => api<{ readonly deliveries: ReadonlyArray<WebhookDelivery> }>(`${base}/webhooks`), [
    base,
    status
  ])
  const rows = deliveries.data?.deliveries ?? []
  if (rows.length === 0 && deliveries.error === undefined) return null
  return (
    <section aria-labelledby="webhooks-heading" data-testid="webhook-deliveries">
      <h3 id="webhooks-heading">
        Webhook deliveries <button type="button" onClick={deliveries.reload}>Refresh</button>
      </h3>
      {deliveries.error !== undefined && <p role="alert" class="error">{deliveries.error}</p>}
      <table>
        <thead>
          <tr>
            <th>event</th>
            <th>url</th>
            <th>status</th>
            <th>attempts</th>
            <th>last answer</th>
            <th>next attempt</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((delivery) => (
            <tr key={delivery.id} data-testid="webhook-delivery" data-status={delivery.status}>
              <td>
                <code>{delivery.event}</code>
                {delivery.truncated && <span class="badge">truncated</span>}
              </td>
              <td>
                <code>{delivery.url}</code>
              </td>
              <td class={`status ${delivery.status}`}>{delivery.status}</td>
              <td>{delivery.attempts}</td>
              <td>
                {delivery.lastStatusCode ?? ""}{" "}
                {delivery.lastError !== null && <span class="error">{delivery.lastError}</span>}
              </td>
              <td>{delivery.nextAttemptAt === null ? "" : new Date(delivery.nextAttemptAt).toLocaleTimeString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
