import { Effect, Schema } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"
import { defineApp } from "../src/App.js"
import { assistant } from "../src/examples/agents.js"
import { pipeline } from "../src/examples/workflows.js"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"

// Issue #30: what the typed builder infers, checked by the compiler (`npm test` type-checks first);
// the mistakes it refuses are test/workflow-type-errors.test.ts.

class Refused extends Schema.TaggedError<Refused>()("Refused", { why: Schema.String }) {}

const Input = Schema.Struct({ name: Schema.String, n: Schema.Number })

const child = workflow({
  id: "child",
  name: "C",
  purpose: "p",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ doubled: Schema.Number })
})
  .andThen({ id: "double", execute: ({ data }) => ({ doubled: data.n * 2 }) })

const typed = workflow({
  id: "typed",
  name: "Typed",
  purpose: "every step type",
  input: Input,
  result: Schema.Struct({ total: Schema.Number })
})
  .andThen({
    id: "load",
    execute: ({ data, input }) => {
      expectTypeOf(data).toEqualTypeOf<{ readonly name: string; readonly n: number }>()
      expectTypeOf(input).toEqualTypeOf<{ readonly name: string; readonly n: number }>()
      return Effect.succeed({ ticket: data.name, amount: data.n })
    }
  })
  .andTap({ id: "audit", execute: ({ data }) => Effect.logInfo(data.ticket) })
  .andAll({
    id: "measure",
    steps: [
      { id: "len", execute: ({ data }) => data.ticket.length },
      { id: "upper", execute: ({ data }) => Promise.resolve(data.ticket.toUpperCase()) }
    ]
  })
  .andWhen({
    id: "maybe",
    condition: ({ data }) => data[0] > 3,
    step: { id: "boost", execute: ({ data }) => ({ boosted: data[0] * 10 }) }
  })
  .andRace({
    id: "race",
    steps: [
      { id: "quick", execute: () => ({ n: 1 }) },
      { id: "refuse", execute: () => Effect.fail(new Refused({ why: "no" })) }
    ]
  })
  .andWorkflow({ id: "sub", workflow: child })
  .andAgent({ id: "ask", agent: assistant, prompt: ({ data }) => `double is ${data.doubled}` })
  .andThen({
    id: "approve",
    resumeSchema: Schema.Struct({ approved: Schema.Boolean }),
    suspendSchema: Schema.Struct({ amount: Schema.Number }),
    execute: (context) => {
      const { data, steps, resumeData, suspend } = context
      expectTypeOf(data).toEqualTypeOf<string>()
      expectTypeOf(steps.load).toEqualTypeOf<{ ticket: string; amount: number }>()
      expectTypeOf(steps.audit).toEqualTypeOf<{ ticket: string; amount: number }>()
      expectTypeOf(steps.measure).toEqualTypeOf<[number, string]>()
      expectTypeOf(steps.len).toEqualTypeOf<number>()
      expectTypeOf(steps.upper).toEqualTypeOf<string>()
      expectTypeOf(steps.maybe).toEqualTypeOf<[number, string] | { boosted: number }>()
      expectTypeOf(steps.boost).toEqualTypeOf<{ boosted: number } | undefined>()
      expectTypeOf(steps.race).toEqualTypeOf<{ n: number }>()
      expectTypeOf(steps.quick).toEqualTypeOf<{ n: number } | undefined>()
      expectTypeOf(steps.sub).toEqualTypeOf<{ readonly doubled: number }>()
      expectTypeOf(steps.ask).toEqualTypeOf<string>()
      expectTypeOf(resumeData).toEqualTypeOf<{ readonly approved: boolean } | undefined>()
      expectTypeOf(suspend).parameters.toEqualTypeOf<[reason: string, data: { readonly amount: number }]>()
      if (resumeData === undefined) return suspend("approve?", { amount: steps.load.amount })
      return { total: resumeData.approved ? steps.load.amount : 0 }
    }
  })

describe("the typed workflow builder", () => {
  it("infers each step's data, the steps record, resume and suspend data (checked at compile time)", () => {
    expectTypeOf(typed).toMatchTypeOf<
      WorkflowDefinition<{ readonly name: string; readonly n: number }, { readonly total: number }, never>
    >()
    expectTypeOf(pipeline).toMatchTypeOf<WorkflowDefinition>()
    expect(typed.steps.map((step) => step.id)).toEqual([
      "load",
      "audit",
      "measure",
      "maybe",
      "race",
      "sub",
      "ask",
      "approve"
    ])
  })

  it("without schemas, suspend's data is optional and resumeData unknown, as before", () => {
    const plain = workflow({ id: "plain", name: "P", purpose: "p", input: Input, result: Schema.Unknown })
      .andThen({
        id: "wait",
        execute: ({ resumeData, suspend }) => {
          expectTypeOf(resumeData).toEqualTypeOf<unknown>()
          expectTypeOf(suspend).toEqualTypeOf<(reason: string, data?: unknown) => never>()
          return resumeData ?? suspend("wait")
        }
      })
    expect(defineApp({ workflows: [plain] }).workflows).toHaveLength(1)
  })

  it("step ids are unique across the whole tree (inner steps included), checked when the workflow is defined", () => {
    const start = workflow({ id: "dupes", name: "D", purpose: "p", input: Input, result: Schema.Unknown })
      .andAll({ id: "all", steps: [{ id: "x", execute: () => 1 }, { id: "y", execute: () => 2 }] })
    expect(() => start.andThen({ id: "x", execute: () => 3 })).toThrow(`Workflow dupes has two steps with the id "x"`)
    expect(() => start.andWhen({ id: "when", condition: () => true, step: { id: "all", execute: () => 3 } })).toThrow(
      `Workflow dupes has two steps with the id "all"`
    )
    expect(() => start.andRace({ id: "race", steps: [{ id: "z", execute: () => 1 }, { id: "z", execute: () => 2 }] }))
      .toThrow(
        `Workflow dupes has two steps with the id "z"`
      )
  })

  it("the compile-cost fixture holds a 60-step workflow and an app of 20 workflows (compiled by the fixture tests)", async () => {
    // Imported by a computed path: the fixture stays out of `npm run typecheck` (issue #30 settled 14).
    const path = "./type-fixtures-ok/large-workflow.js"
    const { large, many }: {
      readonly large: { readonly steps: ReadonlyArray<unknown> }
      readonly many: { readonly workflows: ReadonlyArray<unknown> }
    } = await import(path)
    expect(large.steps.length).toBeGreaterThanOrEqual(60)
    expect(many.workflows).toHaveLength(20)
  })
})
