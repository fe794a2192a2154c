import { describe, expectTypeOf, it } from "@effect/vitest"
import { Context, Duration, Effect, Schema } from "effect"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"

// Durable timers (issue #31), at compile time: a sleep's data passes through typed, its `steps` entry
// is that data, and a duration or date function's Effect requirement joins the workflow's R.

class Calendar extends Context.Tag("app/Calendar")<Calendar, { readonly next: Effect.Effect<Date> }>() {}
class Policy extends Context.Tag("app/Policy")<Policy, { readonly delay: Effect.Effect<Duration.Duration> }>() {}

type RequirementsOf<W> = W extends WorkflowDefinition<any, any, infer R> ? R : never

const base = workflow({
  id: "t",
  name: "T",
  purpose: "p",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ label: Schema.String })
})
  .andThen({ id: "first", execute: ({ data }) => ({ label: `#${data.n}` }) })

describe("durable timers: types", () => {
  it("the data passes through a sleep typed; the next step sees it and steps[sleep id] is it", () => {
    const flow = base
      .andSleep({ id: "nap", duration: "5 seconds" })
      .andSleepUntil({ id: "until", date: new Date() })
      .andThen({
        id: "after",
        execute: ({ data, steps }) => {
          expectTypeOf(data).toEqualTypeOf<{ label: string }>()
          expectTypeOf(steps.nap).toEqualTypeOf<{ label: string }>()
          expectTypeOf(steps.until).toEqualTypeOf<{ label: string }>()
          return data
        }
      })
    expectTypeOf(flow).toMatchTypeOf<WorkflowDefinition<{ readonly n: number }, { readonly label: string }, never>>()
  })

  it("a duration or date function's Effect requirement joins R; plain values and Promises add nothing", () => {
    const flow = base
      .andSleep({ id: "nap", duration: () => Effect.flatMap(Policy, (policy) => policy.delay) })
      .andSleepUntil({ id: "until", date: () => Effect.flatMap(Calendar, (calendar) => calendar.next) })
      .andSleep({ id: "plain", duration: ({ data }) => Duration.millis(data.label.length) })
      .andSleepUntil({ id: "promised", date: async () => "2030-01-01T00:00:00Z" })
    expectTypeOf(flow).toMatchTypeOf<
      WorkflowDefinition<{ readonly n: number }, { readonly label: string }, Policy | Calendar>
    >()
    expectTypeOf(base.andSleep({ id: "x", duration: 10 })).toMatchTypeOf<
      WorkflowDefinition<{ readonly n: number }, { readonly label: string }, never>
    >()
    expectTypeOf<RequirementsOf<typeof flow>>().toEqualTypeOf<Policy | Calendar>()
    expectTypeOf<RequirementsOf<typeof base>>().toEqualTypeOf<never>()
  })

  it("the function sees the step's context; wrong values do not compile", () => {
    base.andSleep({
      id: "nap",
      duration: ({ data, input }) => {
        expectTypeOf(data).toEqualTypeOf<{ label: string }>()
        expectTypeOf(input).toEqualTypeOf<{ readonly n: number }>()
        return Duration.seconds(input.n)
      }
    })
    // @ts-expect-error a duration is not a boolean
    base.andSleep({ id: "bad", duration: true })
    // @ts-expect-error a date function returns a Date or a string
    base.andSleepUntil({ id: "bad", date: () => 42 })
    // @ts-expect-error an id is required
    base.andSleep({ duration: "1 second" })
  })
})
