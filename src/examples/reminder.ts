import { Duration, Effect, Schema } from "effect"
import { workflow } from "../workflows/Workflow.js"

/**
 * A durable timer (issue #31): notes the message, sleeps `delaySeconds` with no fiber and no memory held
 * (the execution survives restarts and wakes at its committed time), then delivers it.
 */
export const reminder = workflow({
  id: "reminder",
  name: "Reminder",
  purpose: "Sleep for the given number of seconds (durably), then deliver the message",
  input: Schema.Struct({
    message: Schema.String,
    delaySeconds: Schema.Number.pipe(Schema.nonNegative(), Schema.lessThanOrEqualTo(31_622_400))
  }).annotations({ examples: [{ message: "stand up and stretch", delaySeconds: 2 }] }),
  result: Schema.Struct({ message: Schema.String, delaySeconds: Schema.Number, deliveredAt: Schema.String })
})
  .andThen({ id: "note", execute: ({ data }) => Effect.succeed({ message: data.message, delaySeconds: data.delaySeconds }) })
  .andSleep({ id: "wait", duration: ({ data }) => Duration.seconds(data.delaySeconds) })
  .andThen({
    id: "deliver",
    execute: ({ data }) => ({ message: data.message, delaySeconds: data.delaySeconds, deliveredAt: new Date().toISOString() })
  })
