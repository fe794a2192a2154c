import { JsonToSseTransformStream, Output, streamText, toUIMessageStream } from "ai"
import { Effect, Stream, Tracer } from "effect"
import { type ExecutionFailed, type GuardrailBlocked, messageOf, type ValidationError } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import { answeringModel } from "../models/fallbackModel.js"
import { validatedJsonSchema } from "./aiTools.js"
import { callArguments, failed, type GenerationEnv, prepare } from "./call.js"
import { causeOf, inCallSpan } from "./callSpan.js"
import type { CallRequest, ObjectEvent, PreparedCall } from "./contract.js"
import { eventStream, fullStreamAlone, type StreamOutcome } from "./eventStream.js"
import { startHook } from "./hooks.js"
import { messageIds } from "./messages.js"
import { checkOutputSchema, outputFor } from "./outputSchema.js"
import type { GuardHooks } from "./plugins.js"
import { recorder } from "./record.js"
import { collectTools, toUsage } from "./results.js"
import { once, recordingBlocks } from "./streamBlocked.js"
import { toolOutcomes } from "./toolOutcomes.js"

type StreamTextResult = ReturnType<typeof streamText>
type CallFailure = ExecutionFailed | ValidationError | GuardrailBlocked

/** Resumes once the promise jobs already queued (and those they queue) have run. */
const afterPendingPromises = Effect.async<void>((resume) => {
  const pending = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(pending))
})

/**
 * Starts the model call when the stream is pulled, with an AbortController owned by the stream's scope:
 * when the client goes away the stream is interrupted and the model request is aborted. The outcome
 * is recorded from the SDK's own finish / error / abort callbacks.
 */
const streamed = <A, E>(
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  span: Tracer.Span,
  extra: Record<string, unknown>,
  read: (result: StreamTextResult, guard: GuardHooks | undefined) => Stream.Stream<A, E>,
  guarded = false
) =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const controller = yield* Effect.acquireRelease(
      Effect.sync(() => new AbortController()),
      (controller) => Effect.sync(() => controller.abort())
    )
    const recordCall = recorder(env, agent, request, prepared, span)
    // Guarded, the answer is recorded from the guarded parts (the SDK's own end sees the text unguarded).
    const record = guarded ? once(recordCall) : recordCall
    const result = streamText({
      ...callArguments(prepared, controller.signal),
      ...extra,
      onEnd: guarded ? undefined : (event) =>
        record({
          status: "completed",
          output: event.text,
          usage: toUsage(event.usage),
          toolCalls: collectTools(event.steps).toolCalls,
          toolResults: toolOutcomes(event.steps),
          model: answeringModel(prepared.model)
        }),
      onError: ({ error }) => record({ status: "error", cause: causeOf(error) }),
      onAbort: () => record({ status: "cancelled" })
    })
    return read(result, guarded ? { abort: () => controller.abort(), record } : undefined)
  })).pipe(
    // The stream is pulled by the response after the handler returned: what it does (and logs) is in the call's span.
    Stream.provideService(Tracer.ParentSpan, span)
  )

/**
 * The events of a streamed call as a web stream, produced as the model answers: the model call starts
 * here and is aborted when the reader cancels; a completed call is committed before its `finish` event.
 */
export const stream = (env: GenerationEnv, agent: AgentDefinition, given: CallRequest) =>
  inCallSpan("AgentRegistry.stream", agent, given, (span) =>
    Effect.gen(function*() {
      const { request, resumed } = given.options?.approvals === undefined
        ? { request: given, resumed: undefined }
        : yield* env.approvals.resume(agent, given)
      const output = yield* outputFor(request.options)
      const prepared = yield* prepare(env, agent, request, true, resumed)
      if (agent.onStart !== undefined && resumed === undefined) yield* startHook(agent, prepared)
      const controller = new AbortController()
      const record = recorder(env, agent, request, prepared, span)
      const result = streamText({
        ...callArguments(prepared, controller.signal),
        ...(output ? { output } : {}),
        // Errors reach the reader as an error event (and the history as an error); the SDK would also print them.
        onError: () => undefined
      })
      const abort = () => controller.abort()
      const model = () => answeringModel(prepared.model)
      const approvals = prepared.toolApproval === undefined && resumed === undefined
        ? undefined
        : env.approvals.streamed(agent, request, prepared, result.responseMessages, span)
      const events = agent.outputGuardrails?.length
        ? eventStream(
          fullStreamAlone(result).pipeThrough(env.guardrails.stream(agent, prepared.call, prepared.parent, { abort })),
          recordingBlocks(record),
          abort,
          approvals,
          model
        )
        : eventStream(fullStreamAlone(result), record, abort, approvals, model)
      // The SDK starts the model call from its own promises: they run before the response is built, so
      // the provider works on the request meanwhile (a cancelled stream aborts the call and is recorded).
      yield* afterPendingPromises.pipe(Effect.onInterrupt(() => Effect.promise(() => events.cancel())))
      return events
    }))

/**
 * The AI SDK's UI message stream, already in its SSE wire form (ending with `data: [DONE]`). A request
 * whose last message is the assistant's with `approval-responded` tool parts answers the approvals it
 * names (approvals/chat.ts) and continues the call they stopped.
 */
export const chat = (env: GenerationEnv, agent: AgentDefinition, given: CallRequest) =>
  inCallSpan("AgentRegistry.chat", agent, given, (span) =>
    Effect.gen(function*() {
      const answers = env.approvals.chatAnswers(given)
      const { request, resumed } = answers === undefined
        ? { request: given, resumed: undefined }
        : yield* env.approvals.continueAnswered(agent, answers, given)
      const output = yield* outputFor(request.options)
      const prepared = yield* prepare(env, agent, request, true, resumed)
      if (agent.onStart !== undefined && resumed === undefined) yield* startHook(agent, prepared)
      const guarded = agent.outputGuardrails !== undefined && agent.outputGuardrails.length > 0
      const approving = prepared.toolApproval !== undefined || resumed !== undefined
      return streamed(env, agent, request, prepared, span, output ? { output } : {}, (result, guard) => {
        const model = () => answeringModel(prepared.model)
        const parts = approving
          ? result.stream.pipeThrough(env.approvals.chatParts(
            env.approvals.streamed(agent, request, prepared, result.responseMessages, span),
            (outcome: StreamOutcome) => guard?.record?.(outcome) ?? Promise.resolve(),
            !guarded,
            model,
            resumed
          ))
          : result.stream
        return Stream.fromReadableStream({
          evaluate: () =>
            toUIMessageStream({
              stream: guard === undefined || !guarded
                ? parts
                : parts.pipeThrough(env.guardrails.stream(agent, prepared.call, prepared.parent, guard)),
              tools: prepared.tools,
              onError: messageOf,
              // The finish chunk's metadata names the model that answered.
              messageMetadata: ({ part }) => (part.type === "finish" ? { model: model() } : undefined),
              ...messageIds(given, prepared.callId)
            })
              .pipeThrough(new JsonToSseTransformStream())
              .pipeThrough(new TextEncoderStream()),
          onError: failed(agent)
        })
      }, guarded || approving)
    }))

export const streamObject = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest & { readonly schema: unknown }
) =>
  inCallSpan("AgentRegistry.streamObject", agent, request, (span) =>
    Effect.gen(function*() {
      const schema = yield* checkOutputSchema(request.schema, "schema")
      const prepared = yield* prepare(env, agent, request, false)
      if (agent.onStart !== undefined) yield* startHook(agent, prepared)
      const output = Output.object({ schema: validatedJsonSchema(schema) })
      const guarded = agent.outputGuardrails !== undefined && agent.outputGuardrails.length > 0
      return streamed(
        env,
        agent,
        request,
        prepared,
        span,
        { output },
        (result, guard): Stream.Stream<ObjectEvent, CallFailure> =>
          guard !== undefined ?
            env.guardrails.objectEvents(agent, prepared, result, guard, failed(agent)) :
            Stream.concat(
              Stream.fromAsyncIterable(result.partialOutputStream, failed(agent)).pipe(
                Stream.map((partial): ObjectEvent => ({ type: "partial", object: partial }))
              ),
              Stream.fromEffect(Effect.tryPromise({
                try: async (): Promise<ObjectEvent> => ({
                  type: "finish",
                  object: await result.output,
                  finishReason: await result.finishReason,
                  usage: toUsage(await result.usage),
                  model: answeringModel(prepared.model)
                }),
                catch: failed(agent)
              }))
            ),
        guarded
      )
    }))
