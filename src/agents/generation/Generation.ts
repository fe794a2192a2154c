import { generateText, Output } from "ai"
import { Effect } from "effect"
import { type AgentDefinition } from "../Agent.js"
import type { TextResult } from "../AgentsSchemas.js"
import { validatedJsonSchema } from "./aiTools.js"
import { collectTools, toUsage } from "./results.js"
import { agentSpanAttributes } from "./callSpan.js"
import { checkOutputSchema, outputFor } from "./outputSchema.js"
import { toolOutcomes } from "./toolOutcomes.js"
import { startHook } from "./hooks.js"
import { type CallRequest, callArguments, failed, type GenerationEnv, prepare } from "./call.js"
import { tracked } from "./record.js"
import { guardedObject, guardedText, unguarded } from "../guardrails/whole.js"

import { answeringModel } from "../models/fallbackModel.js"

export type { StreamEvent } from "./eventStream.js"
export type { ClientConversation } from "./messages.js"
export type { CallRequest, GenerationEnv } from "./call.js"
export { chat, type ObjectEvent, stream, streamObject } from "./streaming.js"

export const text = Effect.fn("AgentRegistry.text", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, request: CallRequest) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, request))
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true)
    if (agent.onStart !== undefined) yield* startHook(agent, prepared)
    const done = yield* tracked(env, agent, request, prepared, Effect.tryPromise({
      try: async (abortSignal) => {
        const result = await generateText({ ...callArguments(prepared), abortSignal, ...(output ? { output } : {}) })
        const usage = toUsage(result.usage)
        const tools = collectTools(result.steps)
        const model = answeringModel(prepared.model)
        const data: TextResult = {
          text: result.text,
          usage,
          finishReason: result.finishReason,
          ...tools,
          ...(output ? { experimental_output: result.output } : {}),
          model
        }
        const outcome = { output: result.text, usage, toolCalls: tools.toolCalls, toolResults: toolOutcomes(result.steps), model }
        return { result: data, outcome: { status: "completed" as const, ...outcome } }
      },
      catch: failed(agent)
    }).pipe(agent.outputGuardrails?.length ? guardedText(agent, prepared) : unguarded))
    return "blocked" in done ? yield* done.blocked : done.result
  }
)

export const object = Effect.fn("AgentRegistry.object", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, request: CallRequest & { readonly schema: unknown }) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, request))
    const schema = yield* checkOutputSchema(request.schema, "schema")
    const prepared = yield* prepare(env, agent, request, false)
    if (agent.onStart !== undefined) yield* startHook(agent, prepared)
    const done = yield* tracked(env, agent, request, prepared, Effect.tryPromise({
      try: async (abortSignal) => {
        const result = await generateText({
          ...callArguments(prepared),
          abortSignal,
          output: Output.object({ schema: validatedJsonSchema(schema) })
        })
        const usage = toUsage(result.usage)
        const model = answeringModel(prepared.model)
        return { result: result.output, outcome: { status: "completed" as const, output: JSON.stringify(result.output), usage, model } }
      },
      catch: failed(agent)
    }).pipe(agent.outputGuardrails?.length ? guardedObject(agent, prepared) : unguarded))
    return "blocked" in done ? yield* done.blocked : done.result
  }
)

