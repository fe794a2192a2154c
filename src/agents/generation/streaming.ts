import { JsonToSseTransformStream, Output, streamText, toUIMessageStream } from "ai"
import { Effect, Stream, Tracer } from "effect"
import { ExecutionFailed, messageOf, ValidationError } from "../../core/errors.js"
import { type AgentDefinition } from "../Agent.js"
import type { Usage } from "../AgentsSchemas.js"
import { validatedJsonSchema } from "./aiTools.js"
import { messageIds } from "./messages.js"
import { collectTools, toUsage } from "./results.js"
import { causeOf, inCallSpan } from "./callSpan.js"
import { eventStream, fullStreamAlone } from "./eventStream.js"
import { checkOutputSchema, outputFor } from "./outputSchema.js"
import { toolOutcomes } from "./toolOutcomes.js"
import { type CallRequest, callArguments, failed, type GenerationEnv, type PreparedCall, prepare } from "./call.js"
import { recorder } from "./record.js"
import { resume } from "../approvals/continuation.js"
import { streamApprovals } from "../approvals/streamed.js"

type StreamTextResult = ReturnType<typeof streamText>

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
  read: (result: StreamTextResult) => Stream.Stream<A, E>
) =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const controller = yield* Effect.acquireRelease(
      Effect.sync(() => new AbortController()),
      (controller) => Effect.sync(() => controller.abort())
    )
    const record = recorder(env, agent, request, prepared, span)
    const result = streamText({
      ...callArguments(prepared),
      ...extra,
      abortSignal: controller.signal,
      onEnd: (event) =>
        record({
          status: "completed",
          output: event.text,
          usage: toUsage(event.usage),
          toolCalls: collectTools(event.steps).toolCalls,
          toolResults: toolOutcomes(event.steps)
        }),
      onError: ({ error }) => record({ status: "error", cause: causeOf(error) }),
      onAbort: () => record({ status: "cancelled" })
    })
    return read(result)
  })).pipe(
    // The stream is pulled by the response after the handler returned: what it does (and logs) is in the call's span.
    Stream.provideService(Tracer.ParentSpan, span)
  )

/**
 * The events of a streamed call as a web stream, produced as the model answers: the model call starts
 * here and is aborted when the reader cancels; a completed call is committed before its `finish` event.
 */
export const stream = (env: GenerationEnv, agent: AgentDefinition, given: CallRequest) =>
  inCallSpan("AgentRegistry.stream", agent, given, (span) => Effect.gen(function*() {
    const { request, resumed } = given.options?.approvals === undefined ? { request: given, resumed: undefined } : yield* resume(env, agent, given)
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true, resumed)
    const controller = new AbortController()
    const record = recorder(env, agent, request, prepared, span)
    const result = streamText({
      ...callArguments(prepared),
      ...(output ? { output } : {}),
      abortSignal: controller.signal,
      // Errors reach the reader as an error event (and the history as an error); the SDK would also print them.
      onError: () => undefined
    })
    const approvals = prepared.toolApproval === undefined && resumed === undefined
      ? undefined
      : streamApprovals(env, agent, request, prepared, result.responseMessages, span)
    const events = eventStream(fullStreamAlone(result), record, () => controller.abort(), approvals)
    // The SDK starts the model call from its own promises: they run before the response is built, so
    // the provider works on the request meanwhile (a cancelled stream aborts the call and is recorded).
    yield* afterPendingPromises.pipe(Effect.onInterrupt(() => Effect.promise(() => events.cancel())))
    return events
  }))

/** The AI SDK's UI message stream, already in its SSE wire form (ending with `data: [DONE]`). */
export const chat = (env: GenerationEnv, agent: AgentDefinition, request: CallRequest) =>
  inCallSpan("AgentRegistry.chat", agent, request, (span) => Effect.gen(function*() {
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true)
    return streamed(env, agent, request, prepared, span, output ? { output } : {}, (result) =>
      Stream.fromReadableStream({
        evaluate: () =>
          toUIMessageStream({ stream: result.stream, tools: prepared.tools, onError: messageOf, ...messageIds(request, prepared.callId) })
            .pipeThrough(new JsonToSseTransformStream())
            .pipeThrough(new TextEncoderStream()),
        onError: failed(agent)
      }))
  }))

export type ObjectEvent =
  | { readonly type: "partial"; readonly object: unknown }
  | { readonly type: "finish"; readonly object: unknown; readonly finishReason: string; readonly usage: Usage }

export const streamObject = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest & { readonly schema: unknown }
) =>
  inCallSpan("AgentRegistry.streamObject", agent, request, (span) => Effect.gen(function*() {
    const schema = yield* checkOutputSchema(request.schema, "schema")
    const prepared = yield* prepare(env, agent, request, false)
    const output = Output.object({ schema: validatedJsonSchema(schema) })
    return streamed(env, agent, request, prepared, span, { output }, (result): Stream.Stream<ObjectEvent, ExecutionFailed | ValidationError> =>
      Stream.concat(
        Stream.fromAsyncIterable(result.partialOutputStream, failed(agent)).pipe(
          Stream.map((partial): ObjectEvent => ({ type: "partial", object: partial }))
        ),
        Stream.fromEffect(Effect.tryPromise({
          try: async (): Promise<ObjectEvent> => ({
            type: "finish",
            object: await result.output,
            finishReason: await result.finishReason,
            usage: toUsage(await result.usage)
          }),
          catch: failed(agent)
        }))
      ))
  }))
