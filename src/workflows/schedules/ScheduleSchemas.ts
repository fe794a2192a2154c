import { Schema } from "effect"

const Name = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, {
    message: () => "must be 1 to 64 letters, digits, _ or -, starting with a letter or digit"
  })
)

export const ScheduleCatchUp = Schema.Literal("none", "latest", "all").annotations({
  description:
    "Times missed while no instance ran: skipped (none), the last one fired (latest), or each fired, at most the last 100 (all)"
})

export const CreateScheduleRequest = Schema.Struct({
  name: Schema.optional(Name).annotations({
    description: "Unique per workflow and owner; a new id's prefix when absent"
  }),
  cron: Schema.String.pipe(Schema.maxLength(200)).annotations({
    description: "Five fields: minute hour day-of-month month day-of-week"
  }),
  timezone: Schema.optional(Schema.String.pipe(Schema.maxLength(64))).annotations({
    description: "An IANA time zone; UTC when absent"
  }),
  input: Schema.optional(Schema.Unknown).annotations({
    description:
      "The workflow's input for each execution (checked now and at each firing); at most schedules.maxInputBytes (64 KiB) as JSON"
  }),
  catchUp: Schema.optional(ScheduleCatchUp),
  webhook: Schema.optional(Schema.Struct({ url: Schema.String.pipe(Schema.maxLength(2048)) })).annotations({
    description:
      "Each execution's completion callback (as options.webhook of execute): checked now (400) and at each delivery"
  })
}).annotations({
  identifier: "CreateScheduleRequest",
  examples: [{ name: "nightly", cron: "0 3 * * *", timezone: "Europe/Berlin", input: {}, catchUp: "latest" }]
})
export type CreateScheduleRequest = typeof CreateScheduleRequest.Type

const summaryFields = {
  id: Schema.String,
  workflowId: Schema.String,
  name: Schema.String,
  source: Schema.Literal("code", "api").annotations({
    description: "code: declared in the workflow (pause and resume only); api: made here"
  }),
  cron: Schema.String,
  timezone: Schema.NullOr(Schema.String),
  catchUp: ScheduleCatchUp,
  paused: Schema.Boolean,
  nextFireAt: Schema.NullOr(Schema.String).annotations({ description: "The next time it fires; null while paused" }),
  lastFiredAt: Schema.NullOr(Schema.String),
  lastExecutionId: Schema.NullOr(Schema.String),
  failures: Schema.Number.annotations({
    description: "Failed firings in a row (an input that no longer fits); it pauses at 5"
  }),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  webhook: Schema.optional(
    Schema.Struct({ url: Schema.String.annotations({ description: "Userinfo and query redacted" }) })
  )
}

/** A schedule in a list (issue #42): no input and no computed fire times, so a page is bounded whatever the inputs. */
export const ScheduleSummary = Schema.Struct(summaryFields).annotations({
  identifier: "ScheduleSummary",
  description:
    "A schedule as lists show it: its input and next fire times come from GET /workflows/{id}/schedules/{scheduleId}"
})
export type ScheduleSummary = typeof ScheduleSummary.Type

export const ScheduleView = Schema.Struct({
  ...summaryFields,
  input: Schema.Unknown,
  nextFireTimes: Schema.Array(Schema.String).annotations({ description: "Its next five times (none while paused)" })
}).annotations({ identifier: "Schedule" })
export type ScheduleView = typeof ScheduleView.Type

export const ScheduleDeleted = Schema.Struct({
  scheduleId: Schema.String,
  workflowId: Schema.String,
  deleted: Schema.Literal(true)
}).annotations({ identifier: "ScheduleDeleted" })
