import { Schema } from "effect"
import { ErrorDetail } from "../../core/errorDetail.js"
import { JsonSchemaObject } from "../../json-schema/JsonSchemaObject.js"

export const ExecutionStatus = Schema.Literal("running", "suspended", "completed", "error", "cancelled")
export type ExecutionStatus = typeof ExecutionStatus.Type

/** The span an execution was started under (empty ids without one). */
export const ExecutionMetadata = Schema.Struct({ traceId: Schema.String, spanId: Schema.String })

export const WorkflowEventType = Schema.Literal(
  "workflow-start",
  "step-start",
  "step-complete",
  "workflow-suspended",
  "workflow-complete",
  "workflow-error",
  "workflow-cancelled",
  "step-retry",
  "step-sleep"
)

/** One entry of an execution's event log, as stored and as streamed. */
export const WorkflowEvent = Schema.Struct({
  type: WorkflowEventType,
  executionId: Schema.String,
  from: Schema.String,
  timestamp: Schema.String,
  status: Schema.String,
  stepIndex: Schema.optional(Schema.Number),
  stepType: Schema.optional(Schema.String),
  input: Schema.optional(Schema.Unknown),
  output: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  errorDetail: Schema.optional(ErrorDetail),
  reason: Schema.optional(Schema.String),
  data: Schema.optional(Schema.Unknown).annotations({
    description: "workflow-suspended: the data the step suspended with, if any"
  }),
  attempt: Schema.optional(Schema.Number).annotations({
    description: "step-retry: the attempt that failed (1-based); the next one is attempt + 1"
  }),
  delayMs: Schema.optional(Schema.Number).annotations({
    description: "step-retry: the back-off before the next attempt, in milliseconds"
  }),
  retryAt: Schema.optional(Schema.String).annotations({ description: "step-retry: when the next attempt is due" }),
  path: Schema.optional(Schema.String).annotations({
    description:
      "an inner step's path (`measure/upper`, `credit-lines[3]`, `notify/send`); absent on a top-level step's events"
  }),
  wakeAt: Schema.optional(Schema.String).annotations({ description: "step-sleep: when the execution wakes (ISO)" })
}).annotations({ identifier: "WorkflowEvent" })
export type WorkflowEvent = typeof WorkflowEvent.Type

/** A page of an execution's events, inner steps' included (GET /workflows/:id/executions/:executionId/events). */
export const ExecutionEventsPage = Schema.Struct({
  events: Schema.Array(
    Schema.Struct({
      id: Schema.String.annotations({ description: "the event's number (its SSE id)" }),
      ...WorkflowEvent.fields
    })
  ),
  nextAfter: Schema.NullOr(Schema.Number).annotations({
    description: "`after` for the next page; null on the last one"
  })
}).annotations({ identifier: "ExecutionEventsPage" })

const SchemaOrNull = Schema.NullOr(JsonSchemaObject)

export const WorkflowSummary = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  purpose: Schema.String,
  stepsCount: Schema.Number,
  status: Schema.Literal("idle", "running")
}).annotations({ identifier: "WorkflowSummary" })

const stepDescriptionFields = {
  id: Schema.String,
  name: Schema.String,
  type: Schema.String,
  purpose: Schema.String,
  inputSchema: Schema.optional(JsonSchemaObject),
  outputSchema: Schema.optional(JsonSchemaObject),
  suspendSchema: Schema.optional(JsonSchemaObject),
  resumeSchema: Schema.optional(JsonSchemaObject),
  retry: Schema.optional(Schema.Literal(true)).annotations({
    description: "present when the step has a retry policy (its schedule is code, not shown)"
  }),
  timeoutMs: Schema.optional(Schema.Number).annotations({
    description: "the step's timeout, when it has one, in milliseconds"
  })
}

/** An inner step of a step (issue #31): its path under the step, e.g. `lines[]`, `route/positive`, `child/load`. */
export const InnerStepDescription = Schema.Struct({ ...stepDescriptionFields, path: Schema.String }).annotations({
  identifier: "WorkflowInnerStep"
})

export const StepDescription = Schema.Struct({
  ...stepDescriptionFields,
  steps: Schema.optional(Schema.Array(InnerStepDescription)).annotations({
    description:
      "the inner steps of andAll, andRace, andWhen, andForEach, andDoWhile/andDoUntil, andBranch, andMap (its keys) and andWorkflow (the child's steps)"
  })
}).annotations({ identifier: "WorkflowStep" })

export const WorkflowDetails = Schema.Struct({
  ...WorkflowSummary.fields,
  steps: Schema.Array(StepDescription),
  inputSchema: JsonSchemaObject,
  suspendSchema: SchemaOrNull,
  resumeSchema: SchemaOrNull
}).annotations({ identifier: "WorkflowDetails" })

export const ExecuteOptions = Schema.Struct({
  userId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String),
  executionId: Schema.optional(Schema.String.pipe(
    Schema.pattern(/^[a-zA-Z0-9_.:-]{1,128}$/, { message: () => "must be 1 to 128 letters, digits or _.:-" })
  )),
  context: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  wait: Schema.optional(Schema.Literal("parked")).annotations({
    description:
      "execute only: answer 202 with the execution's state as soon as it parks (a sleep step, or queued for a concurrency slot) instead of after EXECUTE_WAIT_SECONDS"
  }),
  webhook: Schema.optional(
    Schema.Struct({ url: Schema.String.pipe(Schema.maxLength(2048)) }).annotations({
      description:
        "A completion callback (issue #33): an https URL whose host is in webhooks.allowedHosts, POSTed a signed body when the execution ends or suspends"
    })
  )
})

export const ExecuteRequest = Schema.Struct({
  input: Schema.optionalWith(Schema.Unknown, { default: () => ({}) }).annotations({
    description: "matching the workflow's inputSchema"
  }),
  options: Schema.optional(ExecuteOptions)
})
export type ExecuteRequest = typeof ExecuteRequest.Type

export const ExecutionResult = Schema.Struct({
  executionId: Schema.String,
  startAt: Schema.String,
  endAt: Schema.NullOr(Schema.String),
  status: ExecutionStatus,
  result: Schema.Unknown,
  suspension: Schema.optional(Schema.Struct({
    suspendedAt: Schema.String,
    reason: Schema.String,
    suspendedStepIndex: Schema.Number,
    data: Schema.optional(Schema.Unknown).annotations({
      description: "the data the step suspended with (`suspend(reason, data)`), if any"
    })
  }))
}).annotations({ identifier: "ExecutionResult" })
export type ExecutionResult = typeof ExecutionResult.Type

/** What execute answers (202) for an execution still parked when it stops waiting (issue #42): its state. */
export const ExecutionParked = Schema.Struct({
  executionId: Schema.String,
  startAt: Schema.String,
  endAt: Schema.Null,
  status: Schema.Literal("running"),
  result: Schema.Null,
  waitingUntil: Schema.optional(Schema.String).annotations({ description: "parked by a sleep step until then (ISO)" }),
  waiting: Schema.optional(Schema.Literal("concurrency")).annotations({
    description: "queued for a slot of its workflow's concurrency limit"
  }),
  queuedAt: Schema.optional(Schema.String).annotations({ description: "with waiting: since when it waits (ISO)" })
}).annotations({ identifier: "ExecutionParked" })
export type ExecutionParked = typeof ExecutionParked.Type

/** A running execution of a limited workflow waiting for a concurrency slot (issue #33). */
const waitingFields = {
  waiting: Schema.optional(Schema.Literal("concurrency")).annotations({
    description: "present while the execution waits for a slot of its workflow's concurrency limit (it is queued, FIFO)"
  }),
  queuedAt: Schema.optional(Schema.String).annotations({ description: "with waiting: since when it waits (ISO)" })
}

export const RunStarted = Schema.Struct({
  executionId: Schema.String,
  workflowId: Schema.String,
  status: ExecutionStatus.annotations({
    description: "running when started; a retry with the same Idempotency-Key shows the execution's current status"
  }),
  startAt: Schema.String,
  ...waitingFields
}).annotations({ identifier: "ExecutionStarted" })

/** What an Idempotency-Key may be: 1 to 255 printable ASCII characters. */
export const IdempotencyKey = Schema.String.pipe(
  Schema.pattern(/^[\x20-\x7E]{1,255}$/, { message: () => "must be 1 to 255 printable ASCII characters" })
)

/** The headers of a workflow start (execute, run, stream). */
export const StartHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(IdempotencyKey.annotations({
    description: "A retry with the same key (per route, workflow and caller, kept 24 h by default) and the same body " +
      "answers with the first request's execution instead of starting another; the same key with another body is 422."
  }))
})

export const SuspendRequest = Schema.Struct({ reason: Schema.optional(Schema.String) })
export const SuspendResult = Schema.Struct({
  executionId: Schema.String,
  status: Schema.Literal("suspended"),
  suspension: Schema.Struct({ suspendedAt: Schema.String, reason: Schema.String })
}).annotations({ identifier: "SuspendResult" })

export const ResumeRequest = Schema.Struct({
  resumeData: Schema.optional(Schema.Unknown),
  options: Schema.optional(Schema.Struct({ stepId: Schema.optional(Schema.String) }))
})

export const CancelRequest = Schema.Struct({ reason: Schema.optional(Schema.String) })
export const CancelResult = Schema.Struct({
  executionId: Schema.String,
  status: Schema.Literal("cancelled"),
  cancelledAt: Schema.String,
  reason: Schema.String
}).annotations({ identifier: "CancelResult" })

export const ExecutionDeleted = Schema.Struct({
  executionId: Schema.String,
  workflowId: Schema.String,
  deleted: Schema.Literal(true)
}).annotations({ identifier: "ExecutionDeleted" })

/** A replay's link to the execution it replays (issue #33). */
export const ReplayOf = Schema.Struct({
  executionId: Schema.String,
  fromStep: Schema.String.annotations({ description: "the step the replay ran from; the steps before it were copied" })
}).annotations({ identifier: "ReplayOf" })

/** One replay of an execution, as the original's record lists it. */
export const ReplayLink = Schema.Struct({
  executionId: Schema.String,
  fromStep: Schema.String,
  createdAt: Schema.String
})
  .annotations({ identifier: "ReplayLink" })

const replayFields = {
  replayOf: Schema.optional(ReplayOf).annotations({
    description: "present on a replay (POST …/replay or …/restart): the execution it replays"
  }),
  replays: Schema.optional(Schema.Array(ReplayLink)).annotations({
    description: "the replays of this execution the caller may see, newest first (at most 100)"
  })
}

export const ExecutionState = Schema.Struct({
  executionId: Schema.String,
  workflowId: Schema.String,
  status: ExecutionStatus,
  startAt: Schema.String,
  suspension: Schema.optional(Schema.Struct({
    suspendedAt: Schema.String,
    reason: Schema.String,
    stepIndex: Schema.Number,
    stepId: Schema.String,
    data: Schema.optional(Schema.Unknown).annotations({
      description: "the data the step suspended with (`suspend(reason, data)`), if any"
    })
  })),
  input: Schema.Unknown,
  context: Schema.Unknown,
  endAt: Schema.optional(Schema.String),
  result: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  errorDetail: Schema.optional(ErrorDetail),
  waitingUntil: Schema.optional(Schema.String).annotations({
    description: "a running execution parked by a sleep step: when it wakes (ISO)"
  }),
  ...waitingFields,
  ...replayFields
}).annotations({ identifier: "ExecutionState" })

export const ExecutionEventRecord = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  name: Schema.String,
  from: Schema.String,
  startTime: Schema.String,
  endTime: Schema.String,
  status: Schema.String,
  input: Schema.optional(Schema.Unknown),
  output: Schema.optional(Schema.Unknown),
  wakeAt: Schema.optional(Schema.String).annotations({ description: "step-sleep: when the execution wakes (ISO)" }),
  path: Schema.optional(Schema.String).annotations({ description: "an inner step's event: its path (issue #31)" }),
  attempt: Schema.optional(Schema.Number).annotations({ description: "step-retry: the attempt that failed" }),
  delayMs: Schema.optional(Schema.Number).annotations({
    description: "step-retry: the back-off before the next attempt"
  }),
  retryAt: Schema.optional(Schema.String).annotations({ description: "step-retry: when the next attempt is due" }),
  error: Schema.optional(Schema.String).annotations({ description: "step-retry: the failed attempt's error" }),
  errorDetail: Schema.optional(ErrorDetail)
})

export const ExecutionRecord = Schema.Struct({
  id: Schema.String,
  workflowId: Schema.String,
  workflowName: Schema.String,
  status: ExecutionStatus,
  input: Schema.optional(Schema.Unknown).annotations({
    description: "left out of a listing's summary (see truncated)"
  }),
  metadata: ExecutionMetadata,
  events: Schema.Array(ExecutionEventRecord),
  output: Schema.optional(Schema.Unknown),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  waitingUntil: Schema.optional(Schema.String).annotations({
    description: "a running execution parked by a sleep step: when it wakes (ISO)"
  }),
  ...waitingFields,
  ...replayFields,
  truncated: Schema.optional(
    Schema.Struct({
      historyBytes: Schema.Number,
      limit: Schema.Number,
      record: Schema.String
    }).annotations({
      description:
        "Only in a listing, for an execution whose events are over `limit` bytes as JSON: input, output and " +
        "events are left out; GET `record` answers the whole record"
    })
  )
}).annotations({ identifier: "ExecutionRecord" })

/** A step path's longest form in a replay request (ids are at most 64 characters; paths nest a few). */
const MAX_STEP_PATH = 1000

export const ReplayRequest = Schema.Struct({
  fromStep: Schema.String.pipe(
    Schema.maxLength(MAX_STEP_PATH, { message: () => `must be at most ${MAX_STEP_PATH} characters` })
  ).annotations({
    description:
      "the top-level step to run from (an id of the workflow as registered now): the steps before it are copied from the execution"
  }),
  input: Schema.optional(Schema.Unknown).annotations({
    description: "a new input for the workflow: only when fromStep is its first step"
  })
}).annotations({ identifier: "ReplayRequest" })
export type ReplayRequest = typeof ReplayRequest.Type

export const ReplayStarted = Schema.Struct({
  ...RunStarted.fields,
  replayOf: ReplayOf
}).annotations({ identifier: "ReplayStarted" })
