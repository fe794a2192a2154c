import { Effect, Metric, Option, Predicate, Runtime, type Tracer } from "effect"
import { ExecutionFailed, GuardrailBlocked, messageOf } from "../../core/errors.js"
import { fromUserResult } from "../../core/userCode.js"
import type { AgentCallContext, AgentDefinition } from "../Agent.js"
import type { GuardrailDecision, InputGuardrail, OutputGuardrail } from "./Guardrail.js"

/** Guardrail actions other than a pass, by agent, guardrail, stage and action (every value from a definition). */
export const guardrailActions = Metric.counter("agent.guardrail.actions", {
  description: "Guardrail rewrites and blocks of agent calls (by agent, guardrail, stage and action)",
  incremental: true
})

export type Stage = "input" | "output"

/**
 * Records a rewrite or a block: a span event on the call's span (the guardrail, its stage and action;
 * never the text) and the metric. A pass records nothing, so a stream's many checks cost no events.
 */
export const noteAction = (
  agentId: string,
  span: Option.Option<Tracer.AnySpan>,
  guardrail: string,
  stage: Stage,
  action: "rewrite" | "block"
) => {
  const attributes = {
    "gen_ai.guardrail.name": guardrail,
    "gen_ai.guardrail.stage": stage,
    "gen_ai.guardrail.action": action
  }
  if (Option.isSome(span) && span.value._tag === "Span") {
    span.value.event("gen_ai.guardrail", BigInt(Date.now()) * 1_000_000n, attributes)
  }
  Effect.runSync(Metric.update(
    guardrailActions.pipe(
      Metric.tagged("agent.id", agentId),
      Metric.tagged("guardrail", guardrail),
      Metric.tagged("stage", stage),
      Metric.tagged("action", action)
    ),
    1
  ))
}

const failedCheck = (guardrail: string, error: unknown) =>
  new ExecutionFailed({ message: `Guardrail ${guardrail} failed: ${messageOf(error)}` })

const isDecision = (value: unknown): value is GuardrailDecision =>
  Predicate.hasProperty(value, "_tag") &&
  (value._tag === "pass" ||
    (value._tag === "rewrite" && Predicate.hasProperty(value, "text") && typeof value.text === "string") ||
    (value._tag === "block" && Predicate.hasProperty(value, "message") && typeof value.message === "string"))

const checked = (value: unknown): GuardrailDecision => {
  if (isDecision(value)) return value
  throw new Error("it returned neither Guardrail.pass, Guardrail.rewrite(text) nor Guardrail.block(message)")
}

/** A guardrail's decision: a plain value as is (no Effect is run for the ready-made ones), else its Effect or Promise. */
export const decide = <Args>(
  guardrail: { readonly name: string; readonly check: (args: Args) => unknown },
  args: Args
): GuardrailDecision | Effect.Effect<GuardrailDecision, ExecutionFailed> => {
  try {
    const out = guardrail.check(args)
    if (!Effect.isEffect(out) && !Predicate.isPromiseLike(out)) return checked(out)
    return fromUserResult(out).pipe(
      Effect.mapError((error) => failedCheck(guardrail.name, error)),
      Effect.flatMap((value) =>
        Effect.try({ try: () => checked(value), catch: (error) => failedCheck(guardrail.name, error) })
      )
    )
  } catch (error) {
    return Effect.fail(failedCheck(guardrail.name, error))
  }
}

export type Guarded = { readonly text: string } | { readonly blocked: GuardrailBlocked }

/** Runs guardrails in order on `text`: each sees the previous one's rewrite; the first block ends it. */
export const guardText = <Args>(
  agentId: string,
  span: Option.Option<Tracer.AnySpan>,
  guardrails: ReadonlyArray<InputGuardrail<never> | OutputGuardrail<never>>,
  text: string,
  args: (text: string) => Args
): Effect.Effect<Guarded, ExecutionFailed> =>
  Effect.gen(function*() {
    let current = text
    for (const guardrail of guardrails) {
      const made = decide(
        guardrail as { readonly name: string; readonly check: (args: Args) => unknown },
        args(current)
      )
      const decision = Effect.isEffect(made) ? yield* made : made
      if (decision._tag === "pass") continue
      noteAction(agentId, span, guardrail.name, guardrail.stage, decision._tag)
      if (decision._tag === "block") {
        return {
          blocked: new GuardrailBlocked({
            message: decision.message,
            guardrail: guardrail.name,
            stage: guardrail.stage
          })
        }
      }
      current = decision.text
    }
    return { text: current }
  })

/** A whole answer through the agent's output guardrails (/text, /object). */
export const guardOutput = (
  agent: AgentDefinition,
  call: AgentCallContext,
  span: Option.Option<Tracer.AnySpan>,
  text: string
) => guardText(agent.id, span, agent.outputGuardrails ?? [], text, (text) => ({ text, final: true, call }))

/** As a Promise, for a stream's transform (which runs outside any fiber). */
export const guardOutputPromise = (
  runtime: Runtime.Runtime<never>,
  agent: AgentDefinition,
  call: AgentCallContext,
  span: Option.Option<Tracer.AnySpan>,
  text: string,
  final: boolean
): Promise<Guarded> =>
  Runtime.runPromise(runtime)(
    guardText(agent.id, span, agent.outputGuardrails ?? [], text, (text) => ({ text, final, call }))
  )
