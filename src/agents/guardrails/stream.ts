import { Cause, Effect, type Option, Runtime, type Tracer } from "effect"
import { GuardrailBlocked, messageOf } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import type { TextResult } from "../AgentsSchemas.js"
import type { AgentCallContext } from "../callContext.js"
import type { StreamPart as Part } from "../generation/contract.js"
import type { GuardHooks } from "../generation/plugins.js"
import { toUsage } from "../generation/results.js"
import { StreamBlocked } from "../generation/streamBlocked.js"
import { streamedToolOutcome, type ToolOutcome } from "../generation/toolOutcomes.js"
import { DEFAULT_HOLD_BACK, type GuardrailDecision } from "./Guardrail.js"
import { decide, type Guarded, noteAction } from "./run.js"
import { toolText } from "./toolResults.js"

type ToolPart = Extract<Part, { readonly type: "tool-result" | "tool-error" }>

/**
 * The SDK's parts with the agent's output guardrails applied to the text as it streams. Each delta is
 * added to the text held back; the guardrails see it (rewriting it or blocking the call), then all
 * but the last `holdBack` characters are sent, so a match of up to that length spanning deltas is seen
 * whole. The held text is checked once more (`final`) and sent when its text block ends. Each tool
 * result and error is checked whole before it is passed on (the model already read it raw). A block
 * ends the stream with an `error` part (StreamBlocked) and aborts the model call.
 */
export const guardStream = (
  agent: AgentDefinition,
  call: AgentCallContext,
  span: Option.Option<Tracer.AnySpan>,
  runtime: Runtime.Runtime<never>,
  hooks: GuardHooks
): TransformStream<Part, Part> => {
  const guardrails = agent.outputGuardrails ?? []
  const holdBack = guardrails.reduce(
    (max, guardrail) => Math.max(max, guardrail.holdBack),
    guardrails.length > 0 ? 0 : DEFAULT_HOLD_BACK
  )
  let held = ""
  let heldId: string | undefined
  let sent = ""
  let stepText = ""
  let ended = false
  const toolCalls: Array<TextResult["toolCalls"][number]> = []
  const toolResults: Array<ToolOutcome> = []

  const check = async (text: string, final: boolean): Promise<Guarded> => {
    let current = text
    for (const guardrail of guardrails) {
      const made = decide(guardrail, { text: current, final, call })
      const decision: GuardrailDecision = Effect.isEffect(made) ? await Runtime.runPromise(runtime)(made) : made
      if (decision._tag === "pass") continue
      noteAction(agent.id, span, guardrail.name, "output", decision._tag)
      if (decision._tag === "block") {
        return {
          blocked: new GuardrailBlocked({ message: decision.message, guardrail: guardrail.name, stage: "output" })
        }
      }
      current = decision.text
    }
    return { text: current }
  }

  /** A tool's result or error as the client receives it (the model read it raw). */
  const guardTool = async (
    part: ToolPart
  ): Promise<{ readonly part: ToolPart } | { readonly blocked: GuardrailBlocked }> => {
    const { rewritten, text } = part.type === "tool-result"
      ? toolText(part.output)
      : { text: messageOf(part.error), rewritten: String }
    const guarded = await check(text, true)
    if ("blocked" in guarded) return guarded
    if (guarded.text === text) return { part }
    return {
      part: part.type === "tool-result"
        ? { ...part, output: rewritten(guarded.text) }
        : { ...part, error: guarded.text }
    }
  }

  const send = (controller: TransformStreamDefaultController<Part>, id: string, text: string) => {
    if (text === "") return
    sent += text
    stepText += text
    controller.enqueue({ type: "text-delta", id, text } as Part)
  }

  const block = async (controller: TransformStreamDefaultController<Part>, blocked: GuardrailBlocked) => {
    ended = true
    const error = new StreamBlocked(blocked, sent)
    await hooks.record?.({ status: "blocked", output: sent })
    controller.enqueue({ type: "error", error } as Part)
    controller.terminate()
    hooks.abort()
  }

  /** Checks the held text a last time and sends it; false when a guardrail blocked. */
  const release = async (controller: TransformStreamDefaultController<Part>): Promise<boolean> => {
    if (held === "" || heldId === undefined) return true
    const guarded = await check(held, true)
    if ("blocked" in guarded) {
      await block(controller, guarded.blocked)
      return false
    }
    held = ""
    send(controller, heldId, guarded.text)
    return true
  }

  // Node calls `cancel` when the reader goes away (the DOM typings do not have it yet).
  const transformer: Transformer<Part, Part> & { readonly cancel: (reason: unknown) => Promise<void> } = {
    async transform(part, controller) {
      if (ended) return
      if (part.type === "text-delta") {
        if (heldId !== undefined && heldId !== part.id && !(await release(controller))) return
        heldId = part.id
        const guarded = await check(held + part.text, false)
        if ("blocked" in guarded) return block(controller, guarded.blocked)
        const cut = Math.max(0, guarded.text.length - holdBack)
        held = guarded.text.slice(cut)
        send(controller, part.id, guarded.text.slice(0, cut))
        return
      }
      if (!(await release(controller))) return
      if (part.type === "tool-result" || part.type === "tool-error") {
        const guarded = await guardTool(part)
        if ("blocked" in guarded) return block(controller, guarded.blocked)
        part = guarded.part
      }
      if (part.type === "start-step") stepText = ""
      else if (part.type === "tool-call") {
        toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.input })
      } else if (part.type === "tool-result" || part.type === "tool-error") toolResults.push(streamedToolOutcome(part))
      else if (part.type === "error") await hooks.record?.({ status: "error", cause: Cause.fail(part.error) })
      else if (part.type === "finish") {
        await hooks.record?.({
          status: "completed",
          output: stepText,
          usage: toUsage(part.totalUsage),
          toolCalls,
          toolResults
        })
      }
      controller.enqueue(part)
    },
    async cancel() {
      hooks.abort()
      await hooks.record?.({ status: "cancelled" })
    }
  }
  return new TransformStream<Part, Part>(transformer)
}
