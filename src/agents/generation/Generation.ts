import type { LanguageModelV4 } from "@ai-sdk/provider"
import { InvalidPromptError } from "@ai-sdk/provider"
import {
  generateText,
  isStepCount,
  JsonToSseTransformStream,
  type ModelMessage,
  Output,
  streamText,
  toUIMessageStream,
  type ToolSet
} from "ai"
import { Cause, Effect, Option, Runtime, Stream, Tracer } from "effect"
import { ExecutionFailed, messageOf, ValidationError } from "../../core/errors.js"
import type { Tool } from "../../tools/Tool.js"
import { type AgentCallContext, type AgentDefinition, type AgentModel, resolveDynamic } from "../Agent.js"
import type { AgentInput, GenerationOptions, HistoryEntry, TextResult, Usage } from "../AgentsSchemas.js"
import type { MemoryStore, Owner } from "../memory/MemoryStore.js"
import { toAiTools, validatedJsonSchema } from "./aiTools.js"
import { type ClientConversation, messageIds, recordedInput, textOf, toModelMessages, userMessageToRemember } from "./messages.js"
import { collectTools, toUsage } from "./results.js"
import { tracedModel } from "./tracedModel.js"
import { agentSpanAttributes, causeOf, endCallSpan, inCallSpan, outcomeExit } from "./callSpan.js"
import { eventStream, fullStreamAlone } from "./eventStream.js"
import { checkOutputSchema, outputFor } from "./outputSchema.js"
import { type CallSettings, resolveSettings } from "./settings.js"
import { checkClaimedToolResults, refusedProviderOptions, withoutCallerSystemMessages, withoutProviderOptions } from "./callerInput.js"
import { type ToolOutcome, toolOutcomes } from "./toolOutcomes.js"

export interface CallRequest {
  readonly input: AgentInput
  readonly options?: GenerationOptions | undefined
  readonly user?: unknown
  /** Under authentication: whose conversation and history entry this call is (then `options.userId` is theirs). */
  readonly owner?: Owner | undefined
  /** The client holds the conversation (the AI SDK's chat request); see ClientConversation. */
  readonly clientConversation?: ClientConversation | undefined
}

/** What generation needs from the registry around it. */
export interface GenerationEnv {
  readonly defaultModel: AgentModel
  readonly memory: MemoryStore["Type"]
  readonly runtime: Runtime.Runtime<never>
  /** Whether model spans keep prompts and completions (ServerConfig.recordContent). */
  readonly recordContent?: boolean
  /** Tools the registry adds for this agent (delegate_task for one with sub-agents). */
  readonly extraTools: (agent: AgentDefinition, call: AgentCallContext) => ReadonlyArray<Tool>
  /** The caller's provider options that may reach the provider, as `provider.key` (none when absent). */
  readonly providerOptionsAllow?: ReadonlySet<string>
}

interface PreparedCall {
  /** The history entry's id, also the id of the assembled chat message. */
  readonly callId: string
  readonly model: LanguageModelV4
  readonly instructions: string
  readonly messages: Array<ModelMessage>
  readonly newMessages: Array<ModelMessage>
  readonly tools: ToolSet
  readonly settings: CallSettings
  readonly maxSteps: number
  readonly call: AgentCallContext
  readonly remember: boolean
  /** The agent call's span: parent of what runs later from the SDK's own promises. */
  readonly parent: Option.Option<Tracer.AnySpan>
}

export type { StreamEvent } from "./eventStream.js"
export type { ClientConversation } from "./messages.js"

const failed = (agent: AgentDefinition, field = "input") => (error: unknown) =>
  InvalidPromptError.isInstance(error)
    ? new ValidationError({ message: `Input validation failed: ${field}: ${error.message}` })
    : new ExecutionFailed({ message: `Agent ${agent.id} failed: ${messageOf(error)}` })

const prepare = (env: GenerationEnv, agent: AgentDefinition, request: CallRequest, withTools: boolean) =>
  Effect.gen(function*() {
    const options = request.options ?? {}
    const call: AgentCallContext = {
      context: options.context ?? {},
      user: request.user ?? null,
      userId: options.userId,
      conversationId: options.conversationId,
      ...(request.owner === undefined ? {} : { owner: request.owner })
    }
    const field = request.clientConversation === undefined ? "input" : "messages"
    const allow = env.providerOptionsAllow ?? new Set<string>()
    const refused = refusedProviderOptions(options, allow)
    if (refused !== undefined) return yield* refused
    const { contextLimit, maxSteps, settings } = resolveSettings(options, agent.defaults)
    const { instructions: agentInstructions, model: agentModel } = agent
    // The common case (fixed instructions and model, a text input) needs no promise, so no async hop.
    const [instructions, model, given] = typeof agentInstructions === "string" && typeof agentModel !== "function" &&
        typeof request.input === "string"
      ? [agentInstructions, agentModel ?? env.defaultModel, [{ role: "user", content: request.input } satisfies ModelMessage]]
      : yield* Effect.all([
        resolveDynamic(agentInstructions, call),
        agentModel === undefined ? Effect.succeed(env.defaultModel) : resolveDynamic(agentModel, call),
        Effect.tryPromise({ try: () => toModelMessages(request.input), catch: (error) => error })
      ]).pipe(Effect.mapError(failed(agent, field)))
    const newMessages = typeof request.input === "string"
      ? given
      : withoutProviderOptions(yield* withoutCallerSystemMessages(given, field), allow)
    yield* checkClaimedToolResults(env.memory, agent.id, call.conversationId, request.owner, newMessages, field)
    const parent = yield* Effect.option(Effect.currentSpan)
    const remember = agent.memory === true && call.conversationId !== undefined
    const client = request.clientConversation
    const past = remember && contextLimit > 0 && client === undefined
      ? yield* env.memory.load(agent.id, call.conversationId!, contextLimit, request.owner)
      : []
    const active = agent.activeTools?.(call)
    const tools = withTools
      ? [...(agent.tools ?? []), ...env.extraTools(agent, call)].filter((t) => active === undefined || active.includes(t.name))
      : []
    return {
      callId: crypto.randomUUID(),
      model: tracedModel(model, agent.id, parent, env.runtime, env.recordContent),
      instructions,
      messages: [...past, ...newMessages],
      newMessages: client === undefined ? newMessages : userMessageToRemember(client),
      tools: toAiTools(tools, { context: call.context, user: call.user }, env.runtime, parent),
      settings,
      maxSteps,
      call,
      remember,
      parent
    } satisfies PreparedCall
  })

const callArguments = (prepared: PreparedCall) => ({
  model: prepared.model,
  instructions: prepared.instructions,
  messages: prepared.messages,
  tools: prepared.tools,
  stopWhen: isStepCount(prepared.maxSteps),
  ...prepared.settings
})

interface Outcome {
  readonly status: HistoryEntry["status"]
  readonly output?: string | undefined
  readonly usage?: Usage | undefined
  readonly toolCalls?: TextResult["toolCalls"] | undefined
  readonly toolResults?: ReadonlyArray<ToolOutcome> | undefined
  /** Why an errored call failed (logged with its line). */
  readonly cause?: Cause.Cause<unknown> | undefined
}

/** Writes the history entry and, when the call completed with memory on, the exchange (all or nothing). */
const finish = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  started: Date,
  outcome: Outcome
) =>
  Effect.gen(function*() {
    const remembered = outcome.status === "completed" && prepared.remember
      ? {
        conversationId: prepared.call.conversationId!,
        userId: prepared.call.userId,
        replacesLastAnswer: request.clientConversation?.replacesLastAnswer === true,
        owner: request.owner,
        messages: [
          ...prepared.newMessages.filter((m) => m.role === "user" && textOf(m) !== "")
            .map((m): ModelMessage => ({ role: "user", content: textOf(m) })),
          ...(outcome.output ? [{ role: "assistant", content: outcome.output } satisfies ModelMessage] : [])
        ]
      }
      : undefined
    yield* env.memory.saveCall(agent.id, {
      id: prepared.callId,
      conversationId: prepared.call.conversationId ?? null,
      userId: prepared.call.userId ?? null,
      input: recordedInput(request),
      output: outcome.output ?? null,
      status: outcome.status,
      startTime: started.toISOString(),
      endTime: new Date().toISOString(),
      usage: outcome.usage ?? null,
      toolCalls: outcome.toolCalls ?? []
    }, remembered, outcome.toolResults)
    // Logged once the call is committed, off the response's path (the line costs about as much as the commit's statement).
    // A failed call (a provider's failure, most often) is a warning with its cause.
    const line = outcome.status === "error"
      ? Effect.logWarning("agent call error", outcome.cause ?? Cause.empty)
      : Effect.logInfo(`agent call ${outcome.status}`)
    yield* Effect.forkDaemon(line.pipe(
      Effect.annotateLogs({
        agentId: agent.id,
        ...(prepared.call.conversationId ? { conversationId: prepared.call.conversationId } : {})
      })
    ))
  })

/** Records the outcome of a one-shot call whatever its exit. */
const tracked = <A extends { readonly outcome: Outcome }, E>(
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  effect: Effect.Effect<A, E>
) =>
  Effect.suspend(() => {
    const started = new Date()
    return effect.pipe(
      Effect.onExit((exit) =>
        finish(env, agent, request, prepared, started, exit._tag === "Success"
          ? exit.value.outcome
          : Cause.isInterruptedOnly(exit.cause) ? { status: "cancelled" } : { status: "error", cause: exit.cause })
      )
    )
  })

export const text = Effect.fn("AgentRegistry.text", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, request: CallRequest) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, request))
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true)
    const { result } = yield* tracked(env, agent, request, prepared, Effect.tryPromise({
      try: async (abortSignal) => {
        const result = await generateText({ ...callArguments(prepared), abortSignal, ...(output ? { output } : {}) })
        const usage = toUsage(result.usage)
        const tools = collectTools(result.steps)
        const data: TextResult = {
          text: result.text,
          usage,
          finishReason: result.finishReason,
          ...tools,
          ...(output ? { experimental_output: result.output } : {})
        }
        const outcome = { output: result.text, usage, toolCalls: tools.toolCalls, toolResults: toolOutcomes(result.steps) }
        return { result: data, outcome: { status: "completed" as const, ...outcome } }
      },
      catch: failed(agent)
    }))
    return result
  }
)

export const object = Effect.fn("AgentRegistry.object", { captureStackTrace: false })(
  function*(env: GenerationEnv, agent: AgentDefinition, request: CallRequest & { readonly schema: unknown }) {
    yield* Effect.annotateCurrentSpan(agentSpanAttributes(agent, request))
    const schema = yield* checkOutputSchema(request.schema, "schema")
    const prepared = yield* prepare(env, agent, request, false)
    const { result } = yield* tracked(env, agent, request, prepared, Effect.tryPromise({
      try: async (abortSignal) => {
        const result = await generateText({
          ...callArguments(prepared),
          abortSignal,
          output: Output.object({ schema: validatedJsonSchema(schema) })
        })
        const usage = toUsage(result.usage)
        return { result: result.output, outcome: { status: "completed" as const, output: JSON.stringify(result.output), usage } }
      },
      catch: failed(agent)
    }))
    return result
  }
)

/**
 * Records a streamed call's outcome from the SDK's promises, inside the agent call's span, then ends
 * that span; never throws (it may run while the service shuts down).
 */
const recorder = (env: GenerationEnv, agent: AgentDefinition, request: CallRequest, prepared: PreparedCall, span: Tracer.Span) => {
  const started = new Date()
  return (outcome: Outcome) =>
    Runtime.runPromise(env.runtime)(
      finish(env, agent, request, prepared, started, outcome).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not record the agent call", cause)),
        Effect.zipRight(endCallSpan(span, outcomeExit(outcome.status, outcome.cause))),
        Effect.withParentSpan(span)
      )
    ).catch(() => undefined)
}

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
export const stream = (env: GenerationEnv, agent: AgentDefinition, request: CallRequest) =>
  inCallSpan("AgentRegistry.stream", agent, request, (span) => Effect.gen(function*() {
    const output = yield* outputFor(request.options)
    const prepared = yield* prepare(env, agent, request, true)
    const controller = new AbortController()
    const record = recorder(env, agent, request, prepared, span)
    const result = streamText({
      ...callArguments(prepared),
      ...(output ? { output } : {}),
      abortSignal: controller.signal,
      // Errors reach the reader as an error event (and the history as an error); the SDK would also print them.
      onError: () => undefined
    })
    const events = eventStream(fullStreamAlone(result), record, () => controller.abort())
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
