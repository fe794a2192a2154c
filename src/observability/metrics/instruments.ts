import { Effect, Metric, MetricBoundaries, MetricLabel } from "effect"

/**
 * The service's metrics, as Effect metrics (bridged to OpenTelemetry by MetricsLive). Names and
 * attributes follow the OpenTelemetry semantic conventions where there is one (HTTP server, GenAI
 * client, Node.js event loop). Effect's metric registry is the process's: every service instance in
 * one process (tests start several) counts into the same metrics.
 *
 * Every attribute value comes from a bounded set: route templates (never raw paths), methods, status
 * codes, model names, workflow statuses.
 */

// Semantic conventions' advice for http.server.request.duration (seconds).
const DURATION_BOUNDARIES = MetricBoundaries.fromIterable([
  0.005,
  0.01,
  0.025,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  0.75,
  1,
  2.5,
  5,
  7.5,
  10
])
// Semantic conventions' advice for gen_ai.client.token.usage (tokens).
const TOKEN_BOUNDARIES = MetricBoundaries.fromIterable([
  1,
  4,
  16,
  64,
  256,
  1024,
  4096,
  16384,
  65536,
  262144,
  1048576,
  4194304
])

export const httpServerDuration = Metric.histogram(
  "http.server.request.duration",
  DURATION_BOUNDARIES,
  "Duration of HTTP server requests in seconds, until the response's head (by method, route template and status)"
)

export const tokenUsage = Metric.histogram(
  "gen_ai.client.token.usage",
  TOKEN_BOUNDARIES,
  "Tokens used per model call (gen_ai.token.type input or output, by model and provider)"
)

export const workflowExecutions = Metric.counter("workflow.executions", {
  description: "Workflow executions that reached a status (completed, failed, cancelled, suspended)",
  incremental: true
})

export const workflowTakeovers = Metric.counter("workflow.takeovers", {
  description: "Running workflow executions this instance took over from an instance that left or died",
  incremental: true
})

export const workflowStepRetries = Metric.counter("workflow.step.retries", {
  description: "Workflow steps that failed and were retried under their retry policy (by workflow id)",
  incremental: true
})

const eventLoopDelay = (statistic: string) =>
  Metric.gauge(`nodejs.eventloop.delay.${statistic}`, {
    description: `Event loop delay, ${statistic}, in seconds (last interval)`
  })

export const eventLoopDelayGauges = {
  min: eventLoopDelay("min"),
  max: eventLoopDelay("max"),
  mean: eventLoopDelay("mean"),
  p50: eventLoopDelay("p50"),
  p90: eventLoopDelay("p90"),
  p99: eventLoopDelay("p99")
} as const

/**
 * Label sets made once per distinct combination: Effect caches a tagged metric's hook by the identity
 * of its label array, so an update with a kept array costs a map lookup, not a new metric key.
 */
const LABEL_SETS_MAX = 4096
const labelSets = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
export const labelsFor = (
  key: string,
  make: () => ReadonlyArray<readonly [string, string]>
): ReadonlyArray<MetricLabel.MetricLabel> => {
  let labels = labelSets.get(key)
  if (labels === undefined) {
    labels = make().map(([name, value]) => MetricLabel.make(name, value))
    if (labelSets.size < LABEL_SETS_MAX) labelSets.set(key, labels)
  }
  return labels
}

const executionsBy = {
  completed: Metric.tagged(workflowExecutions, "status", "completed"),
  failed: Metric.tagged(workflowExecutions, "status", "failed"),
  cancelled: Metric.tagged(workflowExecutions, "status", "cancelled"),
  suspended: Metric.tagged(workflowExecutions, "status", "suspended")
}

/** Counts a workflow execution reaching `status`. */
export const countExecution = (status: keyof typeof executionsBy) => Metric.increment(executionsBy[status])

/** Counts a step retried under its policy (workflow ids are the app's definitions: a bounded set). */
export const countStepRetry = (workflowId: string) =>
  Metric.increment(
    Metric.taggedWithLabels(
      workflowStepRetries,
      labelsFor(`workflow.step.retries:${workflowId}`, () => [["workflow.id", workflowId]])
    )
  )

/** Counts an execution this instance took over. */
export const countTakeover = Metric.increment(workflowTakeovers)

export const recordEventLoopDelay = (statistics: Record<keyof typeof eventLoopDelayGauges, number>) =>
  Effect.sync(() => {
    for (const key in eventLoopDelayGauges) {
      const name = key as keyof typeof eventLoopDelayGauges
      eventLoopDelayGauges[name].unsafeUpdate(statistics[name], [])
    }
  })

// Durable timers (issue #31).
export const workflowTimersParked = Metric.gauge("workflow.timers.parked", {
  description: "Workflow executions parked by a sleep step in the store (as last read by this instance's timer)"
})

export const workflowTimerLateness = Metric.histogram(
  "workflow.timer.lateness",
  MetricBoundaries.fromIterable([1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000]),
  "Milliseconds from a sleep's wake time (or this instance's start, when later) to its continuation"
)

// Concurrency limits (issue #33): by workflow, never by key (keys are the app's data, unbounded).
export const workflowQueueDepth = Metric.gauge("workflow.queue.depth", {
  description:
    "Workflow executions queued for a concurrency slot in the store, by workflow (as last read by this instance's sweep)"
})

// Model fallback (issue #32, item 4). Agent and model ids are the app's definitions; kinds are statuses, network codes, "timeout".
export const modelAttemptFailures = Metric.counter("gen_ai.client.model.attempt_failures", {
  description:
    "Model calls of an agent with a fallback policy that failed retryably (each is retried or falls over; by agent and model)",
  incremental: true
})

export const modelFallbacks = Metric.counter("gen_ai.client.model.fallbacks", {
  description:
    "Model calls that moved on to an agent's next model after the retries of one failed (by agent, model left and failure)",
  incremental: true
})

/** Counts a retryable failure of `model`. */
export const countModelAttemptFailure = (agentId: string, model: string) =>
  Metric.increment(
    Metric.taggedWithLabels(
      modelAttemptFailures,
      labelsFor(`model.attempt_failures:${agentId}:${model}`, () => [
        ["gen_ai.agent.id", agentId],
        ["gen_ai.request.model", model]
      ])
    )
  )

/** Counts a fall-over from `model` to the agent's next one. */
export const countModelFallback = (agentId: string, model: string, kind: string) =>
  Metric.increment(
    Metric.taggedWithLabels(
      modelFallbacks,
      labelsFor(`model.fallbacks:${agentId}:${model}:${kind}`, () => [
        ["gen_ai.agent.id", agentId],
        ["gen_ai.request.model", model],
        ["error.type", kind]
      ])
    )
  )

// Workflow schedules (issue #33).
export const scheduleFires = Metric.counter("workflow.schedule.fires", {
  description: "Executions started by workflow schedules (one per schedule and fire time, across instances)",
  incremental: true
})

export const scheduleFireLag = Metric.histogram(
  "workflow.schedule.fire_lag",
  MetricBoundaries.fromIterable([1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000]),
  "Milliseconds from a schedule's fire time to the commit of its execution"
)

// Completion callbacks (issue #33): each attempt by its outcome (delivered, retry, failed).
export const webhookDeliveries = Metric.counter("webhook.deliveries", {
  description:
    "Completion-callback delivery attempts, by outcome (delivered, retry: to be tried again, failed: given up)",
  incremental: true
})

export const countWebhookDelivery = (outcome: "delivered" | "retry" | "failed") =>
  Metric.increment(
    Metric.taggedWithLabels(webhookDeliveries, labelsFor(`webhook.deliveries:${outcome}`, () => [["outcome", outcome]]))
  )
