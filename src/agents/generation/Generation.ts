/**
 * The generation core: an agent's call (/text, /object here; the streamed ones in streaming.ts) from
 * its request to its recorded outcome, through the AI SDK. It owns the call's shape (contract.ts) and
 * the plug-in points (plugins.ts) that tool approval, delegation and guardrails implement; it imports
 * nothing of them, nor of the registry: only the agent's definition, its schemas, the stores it writes
 * (memory), the models and the core below `src/agents`. The registry plugs the features in
 * (agents/plugged.ts).
 */
import { generateText, Output } from "ai"
import { Effect } from "effect"
import type { AgentDefinition } from "../Agent.js"
import type { TextResult } from "../AgentsSchemas.js"
import { answeringModel } from "../models/fallbackModel.js"
import { validatedJsonSchema } from "./aiTools.js"
import { callArguments, failed, type GenerationEnv, prepare } from "./call.js"
import { agentSpanAttributes } from "./callSpan.js"
import type { CallRequest } from "./contract.js"
import { startHook } from "./hooks.js"
import { checkOutputSchema, outputFor } from "./outputSchema.js"
import { tracked, unguarded } from "./record.js"
import { requestsOf, toUsage } from "./results.js"
import { partOf, withPrior } from "./tally.js"

export type { GenerationEnv } from "./call.js"
export type { CallRequest, ClientConversation, ObjectEvent } from "./contract.js"
export type { StreamEvent } from "./eventStream.js"
export { chat, stream, streamObject } from "./streaming.js"

export const text = Effect.fn("AgentRegistry.text", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, given: CallRequest) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, given))
    const { request, resumed } = given.continued !== undefined
      ? { request: given, resumed: given.continued }
      : given.options?.approvals === undefined
      ? { request: given, resumed: undefined }
      : yield* env.approvals.resume(agent, given)
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true, resumed)
    // A call continued after its approvals is the same turn: its onStart ran when it was asked.
    if (agent.onStart !== undefined && resumed === undefined) yield* startHook(agent, prepared)
    const done = yield* tracked(
      env,
      agent,
      request,
      prepared,
      Effect.tryPromise({
        try: async (abortSignal) => {
          const startedAt = resumed?.startedAt ?? (prepared.toolApproval === undefined ? "" : new Date().toISOString())
          const result = await generateText({ ...callArguments(prepared, abortSignal), ...(output ? { output } : {}) })
          const part = partOf(result.steps, result.usage, resumed === undefined ? undefined : result.responseMessages)
          const whole = resumed === undefined ? part : withPrior(resumed.prior, part)
          const model = answeringModel(prepared.model)
          const data: TextResult = {
            text: result.text,
            usage: whole.usage,
            finishReason: result.finishReason,
            toolCalls: whole.toolCalls,
            toolResults: whole.toolResults,
            ...(output ? { experimental_output: result.output } : {}),
            model
          }
          const requests = prepared.toolApproval === undefined ? undefined : requestsOf(result.steps)
          if (requests !== undefined && requests.length > 0) {
            const { pending, rows } = env.approvals.stop({
              agent,
              request,
              callId: prepared.callId,
              startedAt,
              messages: [...prepared.messages, ...result.responseMessages],
              newMessages: prepared.newMessages,
              requests,
              prior: whole,
              recordedInput: prepared.recordedInput,
              delegations: prepared.delegations
            })
            return {
              result: { ...data, pendingApprovals: pending },
              outcome: { status: "pending" as const, approvals: rows }
            }
          }
          const outcome = {
            output: result.text,
            usage: whole.usage,
            toolCalls: whole.toolCalls,
            toolResults: whole.outcomes,
            model
          }
          return { result: data, outcome: { status: "completed" as const, ...outcome } }
        },
        catch: failed(agent)
      }).pipe(agent.outputGuardrails?.length ? env.guardrails.text(agent, prepared) : unguarded)
    )
    if ("blocked" in done) return yield* done.blocked
    // A sub-agent's requests are its parent's, and counted there.
    if (done.result.pendingApprovals !== undefined && request.collectApprovals === undefined) {
      yield* env.approvals.requested(done.result.pendingApprovals)
    }
    return done.result
  }
)

export const object = Effect.fn("AgentRegistry.object", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, request: CallRequest & { readonly schema: unknown }) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, request))
    const schema = yield* checkOutputSchema(request.schema, "schema")
    const prepared = yield* prepare(env, agent, request, false)
    if (agent.onStart !== undefined) yield* startHook(agent, prepared)
    const done = yield* tracked(
      env,
      agent,
      request,
      prepared,
      Effect.tryPromise({
        try: async (abortSignal) => {
          const result = await generateText({
            ...callArguments(prepared, abortSignal),
            output: Output.object({ schema: validatedJsonSchema(schema) })
          })
          const usage = toUsage(result.usage)
          const model = answeringModel(prepared.model)
          return {
            result: result.output,
            outcome: { status: "completed" as const, output: JSON.stringify(result.output), usage, model }
          }
        },
        catch: failed(agent)
      }).pipe(agent.outputGuardrails?.length ? env.guardrails.object(agent, prepared) : unguarded)
    )
    return "blocked" in done ? yield* done.blocked : done.result
  }
)
