import { Data, Duration, Effect, Schedule, Schema } from "effect"
import { workflow } from "../workflows/definition/Workflow.js"

/** The welcome mail's provider, busy for the first attempts the input asks for. */
class ProviderBusy extends Data.TaggedError("ProviderBusy")<{ readonly message: string }> {}

const Account = Schema.Struct({ name: Schema.String, email: Schema.String })

/**
 * Issue #31's durable steps in one workflow: a loop over the accounts (each item committed as it
 * completes), a call retried with back-off on one error only (each retry a `step-retry` event, its
 * attempt count committed), a durable sleep, and a poll until a condition holds (each iteration
 * committed). Every step may run again after a crash until it is committed: `executionId` and `path`
 * make an idempotency key for its side effects.
 */
export const onboarding = workflow({
  id: "onboarding",
  name: "Onboarding",
  purpose:
    "Welcome each account, activate them (retried while the provider is busy), wait, then poll until they are live",
  input: Schema.Struct({
    accounts: Schema.Array(Account).pipe(Schema.minItems(1), Schema.maxItems(50)),
    busyAttempts: Schema.Int.pipe(Schema.between(0, 3)).annotations({
      description: "attempts the provider answers busy"
    }),
    waitSeconds: Schema.Number.pipe(Schema.between(0, 3600))
  }).annotations({
    examples: [{
      accounts: [{ name: "Ada", email: "ada@example.com" }, { name: "Alan", email: "alan@example.com" }],
      busyAttempts: 1,
      waitSeconds: 2
    }]
  }),
  result: Schema.Struct({
    welcomed: Schema.Array(Schema.String),
    activated: Schema.Number,
    checks: Schema.Number,
    live: Schema.Boolean
  })
})
  .andForEach({
    id: "welcome",
    items: ({ data }) => data.accounts,
    concurrency: 4,
    step: {
      id: "send",
      execute: ({ data, executionId, path }) => Effect.succeed(`${data.email} (key ${executionId}:${path})`)
    }
  })
  .andThen({
    id: "activate",
    execute: ({ attempt, data, input }) =>
      attempt <= input.busyAttempts
        ? Effect.fail(new ProviderBusy({ message: `the provider is busy (attempt ${attempt})` }))
        : Effect.succeed({ welcomed: data, activated: data.length }),
    retry: {
      schedule: Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(4))),
      while: (error) => error._tag === "ProviderBusy"
    },
    timeout: "10 seconds"
  })
  .andSleep({ id: "settle", duration: ({ input }) => Duration.seconds(input.waitSeconds) })
  .andThen({ id: "start-polling", execute: ({ data }) => ({ ...data, checks: 0, live: false }) })
  .andDoUntil({
    id: "poll",
    maxIterations: 10,
    step: { id: "check", execute: ({ data }) => ({ ...data, checks: data.checks + 1, live: data.checks + 1 >= 3 }) },
    condition: ({ data }) => data.live
  })

/** A 1-to-10,000-line order priced 16 lines at a time, each line's price committed as it completes (bench row 11). */
export const batch = workflow({
  id: "batch",
  name: "Batch pricing",
  purpose: "Price every line of an order, 16 at a time, each line committed as it completes",
  input: Schema.Struct({ count: Schema.Int.pipe(Schema.between(1, 10_000)) }).annotations({
    examples: [{ count: 100 }]
  }),
  result: Schema.Struct({ lines: Schema.Number, total: Schema.Number })
})
  .andForEach({
    id: "lines",
    items: ({ data }) => Array.from({ length: data.count }, (_, index) => index + 1),
    concurrency: 16,
    step: { id: "price", execute: ({ data }) => data * 3 }
  })
  .andThen({
    id: "total",
    execute: ({ data }) => ({ lines: data.length, total: data.reduce((sum, price) => sum + price, 0) })
  })
