import { Effect } from "effect"
import type { AgentDefinition } from "../agents/Agent.js"
import type { ServiceApp } from "../App.js"
import type { Tool } from "../tools/Tool.js"
import type { Step, StepSpec, WorkflowDefinition } from "../workflows/definition/Workflow.js"

type Provide = <A, E>(effect: Effect.Effect<A, E, unknown>) => Effect.Effect<A, E>

const Original = Symbol.for("agent-workflow-service/Original")

/** The definition a bound one was made from (itself when it is not bound). */
export const originalOf = <A extends object>(definition: A): A =>
  (definition as { readonly [Original]?: A })[Original] ?? definition

/**
 * The app with every piece of user code bound to its context: each Effect it returns is provided
 * with `provide`, so the bound definitions require nothing (`R = never`) and are what the registries
 * hold. Each definition is bound once (the same object twice stays the same bound object: duplicate
 * ids are told apart by identity), and keeps a link to the one it was made from.
 */
export const bindApp = <R>(app: ServiceApp<R>, provide: Provide): ServiceApp<never> => {
  const bound = new Map<object, object>()
  const once = <A extends object>(original: A, make: (target: A) => void): A => {
    const existing = bound.get(original)
    if (existing !== undefined) return existing as A
    // Registered before its parts are bound: sub-agents and child workflows may refer back to it.
    const target = { ...original, [Original]: original }
    bound.set(original, target)
    make(target)
    return target
  }
  const code = <Args extends ReadonlyArray<unknown>, Out>(fn: (...args: Args) => Out) => (...args: Args): Out => {
    const out = fn(...args)
    return (Effect.isEffect(out) ? provide(out as Effect.Effect<unknown, unknown, unknown>) : out) as Out
  }
  const optionalCode = <F extends (...args: never) => unknown>(fn: F | undefined): F | undefined =>
    fn === undefined ? undefined : code(fn as never) as F
  const dynamic = <A>(value: A): A => (typeof value === "function" ? code(value as never) as A : value)

  const tool = (original: Tool<unknown>): Tool<never> =>
    once(original as Tool<never>, (target) => {
      Object.assign(target, {
        run: (input: unknown, context: Parameters<Tool["run"]>[1]) => provide(original.run(input, context))
      })
      const { needsApproval } = original
      if (needsApproval !== undefined) {
        Object.assign(target, {
          needsApproval: (input: unknown, context: Parameters<typeof needsApproval>[1]) =>
            provide(needsApproval(input, context))
        })
      }
    })

  const agent = (original: AgentDefinition<unknown>): AgentDefinition<never> =>
    once(original as AgentDefinition<never>, (target) => {
      Object.assign(target, {
        instructions: dynamic(original.instructions),
        model: dynamic(original.model),
        tools: original.tools?.map(tool),
        subAgents: original.subAgents?.map(agent),
        inputGuardrails: original.inputGuardrails?.map((guardrail) => ({ ...guardrail, check: code(guardrail.check) })),
        outputGuardrails: original.outputGuardrails?.map((guardrail) => ({
          ...guardrail,
          check: code(guardrail.check)
        })),
        onStart: optionalCode(original.onStart),
        onEnd: optionalCode(original.onEnd),
        onToolStart: optionalCode(original.onToolStart),
        onToolEnd: optionalCode(original.onToolEnd),
        onError: optionalCode(original.onError)
      })
    })

  const spec = <S extends StepSpec>(step: S): S => ({ ...step, execute: code(step.execute) })

  const step = (original: Step): Step => {
    switch (original.type) {
      case "andThen":
      case "andTap":
        return spec(original)
      case "andWhen":
        return { ...original, condition: code(original.condition), step: spec(original.step) }
      case "andAll":
      case "andRace":
        return { ...original, steps: original.steps.map(spec) }
      case "andAgent":
        return {
          ...original,
          agent: agent(original.agent),
          prompt: code(original.prompt),
          map: optionalCode(original.map)
        }
      case "andWorkflow":
        return { ...original, workflow: workflow(original.workflow), input: optionalCode(original.input) }
      case "andSleep":
        return { ...original, duration: dynamic(original.duration) }
      case "andSleepUntil":
        return { ...original, date: dynamic(original.date) }
      case "andForEach":
        return { ...original, items: code(original.items), step: spec(original.step) }
      case "andDoWhile":
      case "andDoUntil":
        return { ...original, condition: code(original.condition), step: spec(original.step) }
      case "andBranch":
        return {
          ...original,
          branches: original.branches.map((one) => ({ condition: code(one.condition), step: spec(one.step) }))
        }
      case "andMap":
        return {
          ...original,
          map: Object.fromEntries(Object.entries(original.map).map(([key, fn]) => [key, code(fn)]))
        }
    }
  }

  const workflow = (original: WorkflowDefinition<any, any, unknown>): WorkflowDefinition =>
    once(original as WorkflowDefinition, (target) => {
      Object.assign(target, {
        steps: original.steps.map(step),
        onStart: optionalCode(original.onStart),
        onSuspend: optionalCode(original.onSuspend),
        onFinish: optionalCode(original.onFinish),
        onError: optionalCode(original.onError)
      })
    })

  return { agents: app.agents.map(agent), tools: app.tools.map(tool), workflows: app.workflows.map(workflow) }
}
