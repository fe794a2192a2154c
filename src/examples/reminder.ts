import { Effect, Schema } from "effect"
import { workflow } from "../workflows/definition/Workflow.js"

const MAX_DELAY_SECONDS = 31_622_400

/**
 * A durable timer (issue #31): notes the message and when to deliver it (`at`, or `delaySeconds` from
 * now), sleeps until then with no fiber and no memory held (the execution survives restarts and wakes
 * at its committed time), then delivers it.
 */
export const reminder = workflow({
  id: "reminder",
  name: "Reminder",
  purpose: "Sleep (durably) until the given time, or for the given number of seconds, then deliver the message",
  input: Schema.Struct({
    message: Schema.String,
    delaySeconds: Schema.optional(
      Schema.Number.pipe(Schema.nonNegative(), Schema.lessThanOrEqualTo(MAX_DELAY_SECONDS))
    ),
    at: Schema.optional(
      Schema.DateTimeUtc.annotations({ description: "when to deliver (ISO 8601); instead of delaySeconds" })
    )
  }).annotations({ examples: [{ message: "stand up and stretch", delaySeconds: 2 }] }),
  result: Schema.Struct({
    message: Schema.String,
    delaySeconds: Schema.optional(Schema.Number),
    remindAt: Schema.String,
    deliveredAt: Schema.String
  })
})
  .andThen({
    id: "note",
    execute: ({ data }) =>
      Effect.sync(() => ({
        message: data.message,
        ...(data.delaySeconds === undefined ? {} : { delaySeconds: data.delaySeconds }),
        remindAt: (data.at === undefined
          ? new Date(Date.now() + (data.delaySeconds ?? 0) * 1000)
          : new Date(data.at.epochMillis)).toISOString()
      }))
  })
  .andSleepUntil({ id: "wait", date: ({ data }) => data.remindAt })
  .andThen({ id: "deliver", execute: ({ data }) => ({ ...data, deliveredAt: new Date().toISOString() }) })
