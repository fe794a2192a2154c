import type { streamText } from "ai"
import { Effect, Stream } from "effect"
import { ExecutionFailed, type ValidationError } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import type { Usage } from "../AgentsSchemas.js"
import type { PreparedCall } from "../generation/contract.js"
import type { GuardHooks } from "../generation/plugins.js"
import { toUsage } from "../generation/results.js"
import { answeringModel } from "../models/fallbackModel.js"
import { guardOutput } from "./run.js"

type StreamTextResult = ReturnType<typeof streamText>

/**
 * /stream-object for an agent with output guardrails: a partial object cannot be held back and
 * recalled, so none is sent; the finished object's JSON text passes the guardrails (a rewrite must
 * still be JSON) and is the only frame, or the block is the stream's `error` frame. Recorded here
 * (the SDK's own end sees the object unguarded).
 */
export const guardedObjectEvents = (
  agent: AgentDefinition,
  prepared: PreparedCall,
  result: StreamTextResult,
  hooks: GuardHooks,
  failed: (error: unknown) => ExecutionFailed | ValidationError
) => {
  const record = hooks.record ?? (() => Promise.resolve())
  return Stream.fromEffect(
    Effect.gen(function*() {
      const [object, finishReason, total] = yield* Effect.tryPromise({
        try: () => Promise.all([result.output, result.finishReason, result.usage]),
        catch: failed
      })
      const usage: Usage = toUsage(total)
      const text = JSON.stringify(object)
      const guarded = yield* guardOutput(agent, prepared.call, prepared.parent, text)
      if ("blocked" in guarded) {
        yield* Effect.promise(() => record({ status: "blocked", usage }))
        return yield* guarded.blocked
      }
      const value: unknown = guarded.text === text ? object : yield* Effect.try({
        try: () => JSON.parse(guarded.text) as unknown,
        catch: () =>
          new ExecutionFailed({
            message: `Agent ${agent.id} failed: an output guardrail's rewrite of the object is not JSON`
          })
      })
      yield* Effect.promise(() => record({ status: "completed", output: guarded.text, usage }))
      return { type: "finish" as const, object: value, finishReason, usage, model: answeringModel(prepared.model) }
    }).pipe(Effect.tapErrorCause((cause) => Effect.promise(() => record({ status: "error", cause }))))
  )
}
