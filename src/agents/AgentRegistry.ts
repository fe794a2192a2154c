/**
 * `src/agents`: agents, their calls and what they keep. The registry (this file) is the one door of
 * every call (HTTP, /rpc, MCP, a workflow's andAgent); it holds the definitions and loads the generation
 * core with its features plugged in (plugged.ts) on the first call. Below it: generation/ (the core),
 * approvals/, delegation/ and guardrails/ (plug into the core), memory/ and workingMemory/ (stores),
 * models/. Nothing in the folder imports the registry or the HTTP edge (handlers.ts, AgentsApi.ts).
 */
import type { Schema } from "effect"
import { Context, Effect, Layer, Option, type Stream } from "effect"
import { originalOf } from "../app/bindApp.js"
import { DEFAULT_AGENT_LIMITS } from "../config/AgentSettings.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { DuplicateDefinition } from "../core/definitionId.js"
import {
  type Conflict,
  type ExecutionFailed,
  type GuardrailBlocked,
  NotFound,
  type ValidationError
} from "../core/errors.js"
import { getOrNotFound } from "../core/lookup.js"
import { storageKind } from "../storage/Sql.js"
import type { ToolEntry } from "../tools/ToolRunner.js"
import type { AgentCallContext, AgentDefinition } from "./Agent.js"
import { type AgentOutputInvalid, type OutputSchema, prepareOutput } from "./AgentOutput.js"
import type {
  AgentCard,
  AgentDetails,
  AgentSummary,
  ConversationDeleted,
  HistoryEntry,
  HistoryPage,
  TextResult
} from "./AgentsSchemas.js"
import { ApprovalStore } from "./approvals/ApprovalStore.js"
import type { Owner } from "./callContext.js"
import type * as Generation from "./generation/Generation.js"
import { modelSummary } from "./generation/modelChoice.js"
import { DEFAULTS } from "./generation/settings.js"
import { inputRefusal } from "./inputCap.js"
import { type HistoryQuery, MemoryStore } from "./memory/MemoryStore.js"
import { DefaultModel } from "./models/DefaultModel.js"
import { toolSummaries } from "./toolSummaries.js"
import type { WorkingMemoryDeleted, WorkingMemoryView } from "./workingMemory/schemas.js"
import { routeKey } from "./workingMemory/workingMemory.js"
import { WorkingMemoryStore } from "./workingMemory/WorkingMemoryStore.js"

export type { CallRequest, ObjectEvent, StreamEvent } from "./generation/Generation.js"

type ObjectRequest = Generation.CallRequest & { readonly schema: unknown }
/** Conflict: an approval answered already or expired (issue #32). */
type CallError = NotFound | ValidationError | ExecutionFailed | GuardrailBlocked | Conflict

/** A call asking for structured output described by an Effect Schema. */
export type CallRequestWith<A> = Generation.CallRequest & { readonly output: OutputSchema<A> }

export class AgentRegistry extends Context.Tag("AgentRegistry")<AgentRegistry, {
  readonly list: Effect.Effect<ReadonlyArray<AgentSummary>>
  readonly details: (id: string) => Effect.Effect<AgentDetails, NotFound>
  readonly card: (id: string, baseUrl: string) => Effect.Effect<typeof AgentCard.Type, NotFound>
  readonly history: (
    id: string,
    query: HistoryQuery
  ) => Effect.Effect<typeof HistoryPage.Type, NotFound>
  /** One history entry whole (only `owner`'s, when given: another's is NotFound). */
  readonly historyEntry: (id: string, entryId: string, owner?: Owner) => Effect.Effect<HistoryEntry, NotFound>
  /**
   * Deletes a conversation's memory and history (only `owner`'s rows, when given); NotFound when the
   * agent has none under that id (for that owner).
   */
  readonly forgetConversation: (
    id: string,
    conversationId: string,
    owner?: Owner
  ) => Effect.Effect<typeof ConversationDeleted.Type, NotFound>
  /** The caller's working memory record (value null, version 0 when none was saved). */
  readonly workingMemory: (
    id: string,
    caller: WorkingMemoryCaller
  ) => Effect.Effect<typeof WorkingMemoryView.Type, NotFound | ValidationError>
  readonly forgetWorkingMemory: (
    id: string,
    caller: WorkingMemoryCaller
  ) => Effect.Effect<typeof WorkingMemoryDeleted.Type, NotFound | ValidationError>
  readonly text: (id: string, request: Generation.CallRequest) => Effect.Effect<TextResult, CallError>
  /**
   * Calls an agent by reference (issue #30): it must be the one registered under its id (another
   * object under that id is NotFound). Its TextResult; with `output` (an Effect Schema), the model is
   * asked for that schema's JSON Schema and its object comes back decoded (AgentOutputInvalid if not).
   */
  readonly call: {
    <A>(agent: AgentDefinition<unknown>, request: CallRequestWith<A>): Effect.Effect<A, CallError | AgentOutputInvalid>
    (agent: AgentDefinition<unknown>, request: Generation.CallRequest): Effect.Effect<TextResult, CallError>
  }
  /** The events as the model produces them; cancelling the stream aborts the model call. */
  readonly stream: (
    id: string,
    request: Generation.CallRequest
  ) => Effect.Effect<ReadableStream<Generation.StreamEvent>, CallError>
  /** SSE bytes in the AI SDK's UI message stream format. */
  readonly chat: (
    id: string,
    request: Generation.CallRequest
  ) => Effect.Effect<Stream.Stream<Uint8Array, CallError>, CallError>
  readonly object: (id: string, request: ObjectRequest) => Effect.Effect<unknown, CallError>
  readonly streamObject: (
    id: string,
    request: ObjectRequest
  ) => Effect.Effect<Stream.Stream<Generation.ObjectEvent, CallError>, CallError>
}>() {}

/** Whose working memory a route reads: the call context's identity fields. */
export type WorkingMemoryCaller = Pick<AgentCallContext, "userId" | "conversationId" | "owner">

/** The agents the app serves (the composition root provides them). */
export class RegisteredAgents
  extends Context.Tag("RegisteredAgents")<RegisteredAgents, ReadonlyArray<AgentDefinition>>()
{}

/** Every agent reachable from the given ones (sub-agents included), each once. */
export const allAgents = (
  agents: ReadonlyArray<AgentDefinition>
): Effect.Effect<ReadonlyArray<AgentDefinition>, DuplicateDefinition> =>
  Effect.suspend(() => {
    const byId = new Map<string, AgentDefinition>()
    const visit = (agent: AgentDefinition): DuplicateDefinition | undefined => {
      const existing = byId.get(agent.id)
      if (existing === agent) return undefined
      if (existing !== undefined) return new DuplicateDefinition({ kind: "agent", id: agent.id })
      byId.set(agent.id, agent)
      for (const sub of agent.subAgents ?? []) {
        const duplicate = visit(sub)
        if (duplicate !== undefined) return duplicate
      }
      return undefined
    }
    for (const agent of agents) {
      const duplicate = visit(agent)
      if (duplicate !== undefined) return Effect.fail(duplicate)
    }
    return Effect.succeed([...byId.values()])
  })

/** The tools of the agents, with their owners, for the ToolRunner. */
export const agentToolEntries = (
  agents: ReadonlyArray<AgentDefinition>
): Effect.Effect<ReadonlyArray<ToolEntry>, DuplicateDefinition> =>
  Effect.map(
    allAgents(agents),
    (all) =>
      all.flatMap((agent) =>
        (agent.tools ?? []).map((tool) => ({ tool, agents: [{ id: agent.id, name: agent.name }] }))
      )
  )

export const AgentRegistryLive: Layer.Layer<
  AgentRegistry,
  DuplicateDefinition,
  RegisteredAgents | ServerConfig | DefaultModel | MemoryStore | WorkingMemoryStore | ApprovalStore
> = Layer.effect(
  AgentRegistry,
  Effect.gen(function*() {
    const registered = yield* Effect.flatMap(RegisteredAgents, allAgents)
    const config = yield* ServerConfig
    const storage = storageKind(config.databaseUrl)
    const byId = new Map(registered.map((agent) => [agent.id, agent]))
    const defaultModel = yield* DefaultModel
    const memory = yield* MemoryStore
    const workingMemory = yield* WorkingMemoryStore
    const approvalStore = yield* ApprovalStore
    const runtime = yield* Effect.runtime<never>()
    const limits = config.agentLimits ?? DEFAULT_AGENT_LIMITS
    // The AI SDK (with the zod schemas it builds at import) is a large share of start-up time that
    // a process serving no agent call never needs: it is loaded by the first call.
    const generation = yield* Effect.cached(
      Effect.map(Effect.promise(() => import("./plugged.js")), (module) =>
        module.plugged({
          config,
          contextMaxBytes: limits.contextMaxBytes,
          defaultModel,
          memory,
          workingMemory,
          approvalStore,
          runtime
        }))
    )

    const find = (id: string) => getOrNotFound(byId, "Agent", id)

    // Every door (HTTP, /rpc, MCP, andAgent) enters here: the input is measured once, before any work.
    const admitted = <A, E>(
      request: { readonly input?: unknown },
      run: () => Effect.Effect<A, E>
    ): Effect.Effect<A, E | ValidationError> => {
      const refused = inputRefusal(request.input, limits.maxInputBytes)
      return refused === undefined ? run() : Effect.fail(refused)
    }

    // The registry holds the definitions bound to the app's context; the caller holds what it defined.
    const findRegistered = (agent: AgentDefinition<unknown>) => {
      const registered = byId.get(agent.id)
      return registered !== undefined && originalOf(registered) === originalOf(agent)
        ? Effect.succeed(registered)
        : Effect.fail(
          new NotFound({
            message: byId.has(agent.id)
              ? `Agent ${agent.id} is not the agent registered under that id`
              : `Agent ${agent.id} is not registered in this app`
          })
        )
    }

    function call<A>(
      agent: AgentDefinition<unknown>,
      request: CallRequestWith<A>
    ): Effect.Effect<A, CallError | AgentOutputInvalid>
    function call(
      agent: AgentDefinition<unknown>,
      request: Generation.CallRequest
    ): Effect.Effect<TextResult, CallError>
    function call(
      agent: AgentDefinition<unknown>,
      { output, ...request }: Generation.CallRequest & { readonly output?: Schema.Schema.AnyNoContext }
    ): Effect.Effect<unknown, CallError | AgentOutputInvalid> {
      return Effect.flatMap(
        findRegistered(agent),
        (found) =>
          admitted(
            request,
            () =>
              Effect.flatMap(generation, (g): Effect.Effect<unknown, CallError | AgentOutputInvalid> => {
                if (output === undefined) {
                  return g.text(found, request)
                }
                const prepared = prepareOutput(output)
                return Effect.flatMap(
                  g.object(found, { ...request, schema: prepared.jsonSchema }),
                  (value) => prepared.decode(found.id, value)
                )
              })
          )
      )
    }

    const summary = (agent: AgentDefinition): AgentSummary => ({
      id: agent.id,
      name: agent.name,
      description: agent.purpose,
      status: "idle",
      model: modelSummary(agent.model, defaultModel),
      tools: toolSummaries(agent),
      subAgents: (agent.subAgents ?? []).map(summary),
      memory: agent.memory
        ? { config: { storage, contextLimit: agent.defaults?.contextLimit ?? DEFAULTS.contextLimit } }
        : null,
      isTelemetryEnabled: true
    })

    const summaries = registered.map(summary)

    return AgentRegistry.of({
      list: Effect.succeed(summaries),
      details: Effect.fn("AgentRegistry.details", { captureStackTrace: false })(function*(id: string) {
        yield* Effect.annotateCurrentSpan("agent.id", id)
        const agent = yield* find(id)
        return {
          ...summary(agent),
          tools: toolSummaries(agent).map((tool) => tool.name),
          instructions: typeof agent.instructions === "function" ? "(dynamic)" : agent.instructions,
          guardrails: {
            input: (agent.inputGuardrails ?? []).map((guardrail) => guardrail.name),
            output: (agent.outputGuardrails ?? []).map((guardrail) => guardrail.name)
          },
          ...(agent.workingMemory === undefined ? {} : { workingMemory: { scope: agent.workingMemory.scope } })
        }
      }),
      card: Effect.fn("AgentRegistry.card", { captureStackTrace: false })(function*(id: string, baseUrl: string) {
        yield* Effect.annotateCurrentSpan("agent.id", id)
        const agent = yield* find(id)
        return {
          protocolVersion: "0.3.0",
          name: agent.name,
          description: agent.purpose,
          url: `${baseUrl}/agents/${agent.id}`,
          version: "1.0.0",
          capabilities: { streaming: true },
          defaultInputModes: ["text"],
          defaultOutputModes: ["text"],
          skills: (agent.tools ?? []).map((tool) => ({
            id: tool.name,
            name: tool.name,
            description: tool.description,
            tags: [...tool.tags]
          }))
        }
      }),
      history: Effect.fn("AgentRegistry.history", { captureStackTrace: false })(
        function*(id: string, query: HistoryQuery) {
          yield* Effect.annotateCurrentSpan("agent.id", id)
          yield* find(id)
          const { entries, total } = yield* memory.history(id, query)
          return {
            entries,
            pagination: { page: query.page, limit: query.limit, total, totalPages: Math.ceil(total / query.limit) }
          }
        }
      ),
      historyEntry: Effect.fn("AgentRegistry.historyEntry", { captureStackTrace: false })(
        function*(id: string, entryId: string, owner?: Owner) {
          yield* Effect.annotateCurrentSpan("agent.id", id)
          yield* find(id)
          const found = yield* memory.entry(id, entryId, owner)
          if (Option.isNone(found)) return yield* NotFound.of("History entry", entryId)
          return found.value
        }
      ),
      forgetConversation: Effect.fn("AgentRegistry.forgetConversation", { captureStackTrace: false })(
        function*(id: string, conversationId: string, owner?: Owner) {
          yield* Effect.annotateCurrentSpan({ "entity.type": "agent", "entity.id": id })
          yield* find(id)
          const deleted = yield* memory.forget(id, conversationId, owner)
          if (deleted.messages + deleted.historyEntries + deleted.workingMemory + deleted.approvals === 0) {
            return yield* NotFound.of("Conversation", conversationId)
          }
          return {
            agentId: id,
            conversationId,
            deletedMessages: deleted.messages,
            deletedHistoryEntries: deleted.historyEntries
          }
        }
      ),
      workingMemory: Effect.fn("AgentRegistry.workingMemory", { captureStackTrace: false })(
        function*(id: string, caller: WorkingMemoryCaller) {
          yield* Effect.annotateCurrentSpan("agent.id", id)
          const key = yield* Effect.flatMap(find(id), (agent) => routeKey(agent, caller))
          const row = yield* workingMemory.get(key)
          return Option.match(row, {
            onNone: () => ({ agentId: id, scope: key.scope, value: null, version: 0, updatedAt: null }),
            onSome: (stored) => ({ agentId: id, scope: key.scope, ...stored })
          })
        }
      ),
      forgetWorkingMemory: Effect.fn("AgentRegistry.forgetWorkingMemory", { captureStackTrace: false })(
        function*(id: string, caller: WorkingMemoryCaller) {
          yield* Effect.annotateCurrentSpan("agent.id", id)
          const key = yield* Effect.flatMap(find(id), (agent) => routeKey(agent, caller))
          return { agentId: id, scope: key.scope, deleted: (yield* workingMemory.remove(key)) > 0 }
        }
      ),
      text: (id, request) =>
        Effect.flatMap(
          find(id),
          (agent) => admitted(request, () => Effect.flatMap(generation, (g) => g.text(agent, request)))
        ),
      call,
      stream: (id, request) =>
        Effect.flatMap(
          find(id),
          (agent) => admitted(request, () => Effect.flatMap(generation, (g) => g.stream(agent, request)))
        ),
      chat: (id, request) =>
        Effect.flatMap(
          find(id),
          (agent) => admitted(request, () => Effect.flatMap(generation, (g) => g.chat(agent, request)))
        ),
      object: (id, request) =>
        Effect.flatMap(
          find(id),
          (agent) => admitted(request, () => Effect.flatMap(generation, (g) => g.object(agent, request)))
        ),
      streamObject: (id, request) =>
        Effect.flatMap(
          find(id),
          (agent) => admitted(request, () => Effect.flatMap(generation, (g) => g.streamObject(agent, request)))
        )
    })
  })
)
