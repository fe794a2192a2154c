import { describe, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, Schema } from "effect"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"

// Issue #31 item 2: the loop and branch steps are typed through the builder: the item type reaches
// `step`, `condition` sees the iteration's output, outputs are typed, and the R of every function
// joins the workflow's. Compile-time promises (tsc checks this file); the runtime side is
// test/workflow-loops.test.ts.

class Catalog extends Context.Tag("app/Catalog")<Catalog, { readonly skus: Effect.Effect<ReadonlyArray<string>> }>() {}
class Prices extends Context.Tag("app/Prices")<Prices, { readonly of: (sku: string) => Effect.Effect<number> }>() {}
class Clock extends Context.Tag("app/Clock")<Clock, { readonly ok: Effect.Effect<boolean> }>() {}

type RequirementsOf<W> = W extends WorkflowDefinition<any, any, infer R> ? R : never

const base = () =>
  workflow({ id: "w", name: "W", purpose: "p", input: Schema.Struct({ n: Schema.Number }), result: Schema.Unknown })

describe("loop and branch steps are typed", () => {
  it("andForEach: the item type reaches step (with index and path); the output is the array of its outputs; R joins", () => {
    const _flow = base().andForEach({
      id: "price",
      concurrency: 4,
      items: () => Effect.flatMap(Catalog, (catalog) => catalog.skus),
      step: {
        id: "one",
        execute: ({ data, index, path }) => {
          expectTypeOf(data).toEqualTypeOf<string>()
          expectTypeOf(index).toEqualTypeOf<number>()
          expectTypeOf(path).toEqualTypeOf<string>()
          return Effect.flatMap(Prices, (prices) => Effect.map(prices.of(data), (amount) => ({ sku: data, amount })))
        }
      }
    }).andThen({
      id: "total",
      execute: ({ data, steps }) => {
        expectTypeOf(data).toEqualTypeOf<Array<{ sku: string; amount: number }>>()
        expectTypeOf(steps.price).toEqualTypeOf<Array<{ sku: string; amount: number }>>()
        return data.reduce((sum, line) => sum + line.amount, 0)
      }
    })
    expectTypeOf<RequirementsOf<typeof _flow>>().toEqualTypeOf<Catalog | Prices>()
    // Items from a Promise or a plain array; an item's field that is not there does not compile.
    base().andForEach({
      id: "each",
      items: async ({ data }) => [{ n: data.n }],
      step: {
        id: "item",
        execute: ({ data }) => {
          // @ts-expect-error: an item has no `m`
          return data.m
        }
      }
    })
  })

  it("andDoWhile/andDoUntil: the condition sees the iteration's output; the output is the last iteration's; R joins", () => {
    const flow = base().andDoWhile({
      id: "grow",
      maxIterations: 10,
      step: { id: "inc", execute: ({ data, iteration }) => ({ n: data.n + iteration }) },
      condition: ({ data }) => {
        expectTypeOf(data).toEqualTypeOf<{ n: number }>()
        return Effect.map(Clock, () => data.n < 10)
      }
    }).andDoUntil({
      id: "shrink",
      step: { id: "dec", execute: ({ data }) => ({ n: data.n - 1 }) },
      condition: ({ data }) => data.n <= 0
    })
    flow.andThen({
      id: "after",
      execute: ({ data }) => expectTypeOf(data).toEqualTypeOf<{ n: number }>()
    })
    expectTypeOf<RequirementsOf<typeof flow>>().toEqualTypeOf<Clock>()
    base().andDoWhile({
      id: "wrong",
      // @ts-expect-error: an iteration's output must fit the data type (the next iteration gets it)
      step: { id: "text", execute: () => "not { n }" },
      condition: () => false
    })
  })

  it("andBranch: a tuple with one entry per branch, each its output or undefined; andMap: the object of its keys' values", () => {
    const flow = base().andBranch({
      id: "route",
      branches: [
        { condition: ({ data }) => data.n > 0, step: { id: "up", execute: ({ data }) => data.n } },
        {
          condition: () => Effect.map(Clock, (clock) => clock !== undefined),
          step: { id: "label", execute: () => Promise.resolve("label") }
        }
      ]
    }).andMap({
      id: "summary",
      map: {
        up: ({ data }) => data[0],
        label: ({ data }) => Effect.succeed(data[1] ?? "none"),
        price: () => Effect.flatMap(Prices, (prices) => prices.of("a"))
      }
    })
    flow.andThen({
      id: "after",
      execute: ({ data, steps }) => {
        expectTypeOf(steps.route).toEqualTypeOf<[number | undefined, string | undefined]>()
        expectTypeOf(data).toEqualTypeOf<{ up: number | undefined; label: string; price: number }>()
      }
    })
    expectTypeOf<RequirementsOf<typeof flow>>().toEqualTypeOf<Clock | Prices>()
  })
})
