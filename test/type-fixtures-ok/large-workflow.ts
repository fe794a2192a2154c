import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// Issue #30 (settled 14): compile cost. A 60-step workflow (5 andAll of 8 inner steps, three children
// via andWorkflow that nest two more each, the rest andThen, andTap and andWhen) and an app of 20
// workflows compile with no diagnostic (no TS2589): test/workflow-type-errors.test.ts (the repo's
// TypeScript) and test/workflow-type-errors-ts7.test.ts (TypeScript 7) check it; `npm run typecheck`
// checks it too.

const Count = Schema.Struct({ n: Schema.Number })

const third = workflow({ id: "third", name: "Third", purpose: "innermost child", input: Count, result: Count })
  .andThen({ id: "t1", execute: ({ data }) => ({ n: data.n + 1 }) })
const second = workflow({ id: "second", name: "Second", purpose: "middle child", input: Count, result: Count })
  .andWorkflow({ id: "s1", workflow: third })
  .andThen({ id: "s2", execute: ({ data }) => ({ n: data.n * 2 }) })
const first = workflow({ id: "first", name: "First", purpose: "outer child", input: Count, result: Count })
  .andWorkflow({ id: "f1", workflow: second })

export const large = workflow({ id: "large", name: "Large", purpose: "60 steps", input: Count, result: Count })
  .andThen({ id: "step-0", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-1", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-2", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-3", execute: ({ data, steps }) => Effect.log(data.n, steps["step-2"].n) })
  .andWhen({
    id: "when-4",
    condition: ({ data }) => data.n > 4,
    step: { id: "when-4-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-5", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andAll({
    id: "all-0",
    steps: [
      { id: "a0-0", execute: ({ data }) => data.n + 0 },
      { id: "a0-1", execute: ({ data }) => data.n + 1 },
      { id: "a0-2", execute: ({ data }) => data.n + 2 },
      { id: "a0-3", execute: ({ data }) => data.n + 3 },
      { id: "a0-4", execute: ({ data }) => data.n + 4 },
      { id: "a0-5", execute: ({ data }) => data.n + 5 },
      { id: "a0-6", execute: ({ data }) => data.n + 6 },
      { id: "a0-7", execute: ({ data }) => data.n + 7 }
    ]
  })
  .andThen({ id: "sum-0", execute: ({ data, steps }) => ({ n: data.reduce((a, b) => a + b, 0) + steps["a0-7"] }) })
  .andTap({ id: "tap-8", execute: ({ data, steps }) => Effect.log(data.n, steps["step-0"].n) })
  .andWhen({
    id: "when-9",
    condition: ({ data }) => data.n > 9,
    step: { id: "when-9-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-10", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-11", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andWorkflow({ id: "child-0", workflow: first })
  .andTap({ id: "tap-13", execute: ({ data, steps }) => Effect.log(data.n, steps["step-0"].n) })
  .andWhen({
    id: "when-14",
    condition: ({ data }) => data.n > 14,
    step: { id: "when-14-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-15", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-16", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-17", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andAll({
    id: "all-1",
    steps: [
      { id: "a1-0", execute: ({ data }) => data.n + 0 },
      { id: "a1-1", execute: ({ data }) => data.n + 1 },
      { id: "a1-2", execute: ({ data }) => data.n + 2 },
      { id: "a1-3", execute: ({ data }) => data.n + 3 },
      { id: "a1-4", execute: ({ data }) => data.n + 4 },
      { id: "a1-5", execute: ({ data }) => data.n + 5 },
      { id: "a1-6", execute: ({ data }) => data.n + 6 },
      { id: "a1-7", execute: ({ data }) => data.n + 7 }
    ]
  })
  .andThen({ id: "sum-1", execute: ({ data, steps }) => ({ n: data.reduce((a, b) => a + b, 0) + steps["a1-7"] }) })
  .andThen({ id: "step-20", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-21", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-22", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-23", execute: ({ data, steps }) => Effect.log(data.n, steps["step-22"].n) })
  .andWhen({
    id: "when-24",
    condition: ({ data }) => data.n > 24,
    step: { id: "when-24-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-25", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andWorkflow({ id: "child-1", workflow: first })
  .andThen({ id: "step-27", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-28", execute: ({ data, steps }) => Effect.log(data.n, steps["step-27"].n) })
  .andWhen({
    id: "when-29",
    condition: ({ data }) => data.n > 29,
    step: { id: "when-29-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andAll({
    id: "all-2",
    steps: [
      { id: "a2-0", execute: ({ data }) => data.n + 0 },
      { id: "a2-1", execute: ({ data }) => data.n + 1 },
      { id: "a2-2", execute: ({ data }) => data.n + 2 },
      { id: "a2-3", execute: ({ data }) => data.n + 3 },
      { id: "a2-4", execute: ({ data }) => data.n + 4 },
      { id: "a2-5", execute: ({ data }) => data.n + 5 },
      { id: "a2-6", execute: ({ data }) => data.n + 6 },
      { id: "a2-7", execute: ({ data }) => data.n + 7 }
    ]
  })
  .andThen({ id: "sum-2", execute: ({ data, steps }) => ({ n: data.reduce((a, b) => a + b, 0) + steps["a2-7"] }) })
  .andThen({ id: "step-32", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-33", execute: ({ data, steps }) => Effect.log(data.n, steps["step-32"].n) })
  .andWhen({
    id: "when-34",
    condition: ({ data }) => data.n > 34,
    step: { id: "when-34-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-35", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-36", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-37", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-38", execute: ({ data, steps }) => Effect.log(data.n, steps["step-37"].n) })
  .andWhen({
    id: "when-39",
    condition: ({ data }) => data.n > 39,
    step: { id: "when-39-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-40", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-41", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andAll({
    id: "all-3",
    steps: [
      { id: "a3-0", execute: ({ data }) => data.n + 0 },
      { id: "a3-1", execute: ({ data }) => data.n + 1 },
      { id: "a3-2", execute: ({ data }) => data.n + 2 },
      { id: "a3-3", execute: ({ data }) => data.n + 3 },
      { id: "a3-4", execute: ({ data }) => data.n + 4 },
      { id: "a3-5", execute: ({ data }) => data.n + 5 },
      { id: "a3-6", execute: ({ data }) => data.n + 6 },
      { id: "a3-7", execute: ({ data }) => data.n + 7 }
    ]
  })
  .andThen({ id: "sum-3", execute: ({ data, steps }) => ({ n: data.reduce((a, b) => a + b, 0) + steps["a3-7"] }) })
  .andWhen({
    id: "when-44",
    condition: ({ data }) => data.n > 44,
    step: { id: "when-44-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-45", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-46", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-47", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andWorkflow({ id: "child-2", workflow: first })
  .andWhen({
    id: "when-49",
    condition: ({ data }) => data.n > 49,
    step: { id: "when-49-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })
  .andThen({ id: "step-50", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-51", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-52", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-53", execute: ({ data, steps }) => Effect.log(data.n, steps["step-52"].n) })
  .andAll({
    id: "all-4",
    steps: [
      { id: "a4-0", execute: ({ data }) => data.n + 0 },
      { id: "a4-1", execute: ({ data }) => data.n + 1 },
      { id: "a4-2", execute: ({ data }) => data.n + 2 },
      { id: "a4-3", execute: ({ data }) => data.n + 3 },
      { id: "a4-4", execute: ({ data }) => data.n + 4 },
      { id: "a4-5", execute: ({ data }) => data.n + 5 },
      { id: "a4-6", execute: ({ data }) => data.n + 6 },
      { id: "a4-7", execute: ({ data }) => data.n + 7 }
    ]
  })
  .andThen({ id: "sum-4", execute: ({ data, steps }) => ({ n: data.reduce((a, b) => a + b, 0) + steps["a4-7"] }) })
  .andThen({ id: "step-56", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andThen({ id: "step-57", execute: ({ data, input }) => Effect.succeed({ n: data.n + input.n }) })
  .andTap({ id: "tap-58", execute: ({ data, steps }) => Effect.log(data.n, steps["step-57"].n) })
  .andWhen({
    id: "when-59",
    condition: ({ data }) => data.n > 59,
    step: { id: "when-59-inner", execute: ({ data, input }) => ({ n: data.n - input.n }) }
  })

const small = (id: string) =>
  workflow({ id, name: id, purpose: "one of many", input: Count, result: Count }).andThen({
    id: "one",
    execute: ({ data }) => ({ n: data.n })
  })

export const many = defineApp({
  workflows: [
    large,
    first,
    second,
    third,
    small("w0"),
    small("w1"),
    small("w2"),
    small("w3"),
    small("w4"),
    small("w5"),
    small("w6"),
    small("w7"),
    small("w8"),
    small("w9"),
    small("w10"),
    small("w11"),
    small("w12"),
    small("w13"),
    small("w14"),
    small("w15")
  ]
})
