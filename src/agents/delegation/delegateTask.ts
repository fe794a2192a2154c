/**
 * `delegate_task`, the tool of an agent with sub-agents, and the approvals its sub-agents ask for,
 * which become the parent call's (issue #32, settled 4). Where a human can be asked (/text, /stream,
 * MCP, RPC, a workflow's andAgent), the sub-agents run when the SDK asks whether the delegate_task call
 * needs approval: a sub-agent that stops on approvals makes it "need" one, so the parent's call stops,
 * and its pending approvals are the sub-agents' (approvals/continuation.ts stores and answers them).
 *
 * The folder plugs delegation into the generation core (plugin.ts); it may import the core's contract
 * (generation/contract.ts, plugins.ts), the agent's definition and the tools, never the registry.
 */
import type { SingleToolApprovalFunction } from "ai"
import { Effect, JSONSchema, Option, Runtime, Schema, type Tracer } from "effect"
import { defineTool, type Tool } from "../../tools/Tool.js"
import type { AgentDefinition } from "../Agent.js"
import type { TextResult } from "../AgentsSchemas.js"
import type { AgentCallContext } from "../callContext.js"
import type { CallRequest, DelegationOutcome, Delegations, NewApprovals, StoppedSub } from "../generation/contract.js"

export const DELEGATE_TASK = "delegate_task"

export const DelegateInput = Schema.Struct({
  task: Schema.String.pipe(Schema.minLength(1)),
  targetAgents: Schema.Array(Schema.String).pipe(Schema.minItems(1)),
  context: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
const decodeInput = Schema.decodeUnknownOption(DelegateInput)

export const delegateParameters = JSONSchema.make(DelegateInput) as unknown as Record<string, unknown>

/** One sub-agent's part of delegate_task's result. */
export const SubAnswer = Schema.Struct({
  agentId: Schema.String,
  agentName: Schema.optional(Schema.String),
  response: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
})
export type SubAnswer = typeof SubAnswer.Type

/** How the registry runs a sub-agent's call. */
export type RunSubAgent = (
  sub: AgentDefinition,
  request: CallRequest
) => Effect.Effect<TextResult, { readonly message: string }>

/**
 * Runs the task on each target. `mayStop`: a sub-agent's tool that needs approval stops it (its
 * requests are collected, not stored); otherwise such a tool refuses, as a delegated task cannot ask.
 */
const delegate = (
  agent: AgentDefinition,
  call: AgentCallContext,
  run: RunSubAgent,
  { context, targetAgents, task }: typeof DelegateInput.Type,
  mayStop: boolean
): Effect.Effect<DelegationOutcome> =>
  Effect.forEach(targetAgents, (targetId): Effect.Effect<SubAnswer | StoppedSub> => {
    const target = agent.subAgents?.find((sub) => sub.id === targetId)
    if (target === undefined) {
      return Effect.succeed({ agentId: targetId, error: `${targetId} is not a sub-agent of ${agent.id}` })
    }
    let stopped: NewApprovals | undefined
    return run(target, {
      input: task,
      options: {
        context: { ...call.context, ...context },
        ...(call.userId === undefined ? {} : { userId: call.userId })
      },
      user: call.user,
      ...(call.owner === undefined ? {} : { owner: call.owner }),
      ...(mayStop ? { collectApprovals: (rows: NewApprovals) => void (stopped = rows) } : { delegated: true })
    }).pipe(
      Effect.map((result): SubAnswer | StoppedSub =>
        stopped === undefined
          ? { agentId: target.id, agentName: target.name, response: result.text }
          : { agentId: target.id, approvals: stopped }
      ),
      Effect.catchAll((error) => Effect.succeed({ agentId: target.id, error: error.message }))
    )
  }, { concurrency: "unbounded" }).pipe(Effect.map((parts) => ({
    answers: parts.filter((part): part is SubAnswer => !("approvals" in part)),
    stopped: parts.filter((part): part is StoppedSub => "approvals" in part)
  })))

/** The tool; a call whose sub-agents already ran (when its approval was asked) answers with their results. */
export const delegateTool = (
  agent: AgentDefinition,
  call: AgentCallContext,
  run: RunSubAgent,
  delegations: Delegations
): Tool =>
  defineTool({
    name: DELEGATE_TASK,
    description: "Hand a task to sub-agents and get their answers. Sub-agents: " +
      (agent.subAgents ?? []).map((sub) => `${sub.id} (${sub.purpose})`).join(", "),
    parameters: DelegateInput,
    execute: (input, { toolCallId }) => {
      const known = toolCallId === undefined ? undefined : delegations.get(toolCallId)
      return known !== undefined && known.stopped.length === 0
        ? Effect.succeed(known.answers)
        : Effect.map(delegate(agent, call, run, input, false), (outcome) => outcome.answers)
    }
  })

/**
 * The SDK's approval check for delegate_task where a human can be asked: it runs the sub-agents (once:
 * a continued call's outcomes are known already) and asks approval when one of them stopped on its own.
 */
export const delegationApproval = (
  agent: AgentDefinition,
  call: AgentCallContext,
  run: RunSubAgent,
  delegations: Delegations,
  runtime: Runtime.Runtime<never>,
  parent: Option.Option<Tracer.AnySpan>,
  /** The parent call's abort: the sub-agents run here, outside the SDK's tool execution, stop with it. */
  signal: AbortSignal
): SingleToolApprovalFunction<unknown, unknown, unknown> =>
async (given, { toolCallId }) => {
  const known = delegations.get(toolCallId)
  if (known !== undefined) return known.stopped.length > 0 ? "user-approval" : "not-applicable"
  const input = decodeInput(given)
  // Input the tool refuses fails when it runs.
  if (Option.isNone(input)) return "not-applicable"
  const work = delegate(agent, call, run, input.value, true)
  const outcome = await Runtime.runPromise(runtime)(
    Option.match(parent, { onNone: () => work, onSome: (span) => Effect.withParentSpan(work, span) }),
    { signal }
  )
  delegations.set(toolCallId, outcome)
  return outcome.stopped.length > 0 ? "user-approval" : "not-applicable"
}
