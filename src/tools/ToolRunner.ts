import { Cause, Context, Effect, Layer } from "effect"
import { DuplicateDefinition } from "../core/definitionId.js"
import {
  Conflict,
  DeclaredToolError,
  ExecutionFailed,
  messageOf,
  type NotFound,
  ValidationError
} from "../core/errors.js"
import { jsonValueIssue, nonJsonValue } from "../core/jsonValue.js"
import { getOrNotFound } from "../core/lookup.js"
import {
  errorDetailOf,
  failureMessage,
  markedSpanMessage,
  markSpanMessage,
  spanMessageOf,
  withoutFieldsInSpan
} from "../observability/errorDetail.js"
import type { Tool, ToolContext } from "./Tool.js"

export interface AgentRef {
  readonly id: string
  readonly name: string
}

/** A registered tool and the agents that own it (none for a tool registered on its own). */
export interface ToolEntry {
  readonly tool: Tool
  readonly agents: ReadonlyArray<AgentRef>
}

export interface ToolExecution {
  readonly toolName: string
  readonly result: unknown
  readonly executionTime: number
  readonly timestamp: string
}

export type CallerContext = Omit<ToolContext, "signal">

export class ToolRunner extends Context.Tag("ToolRunner")<ToolRunner, {
  readonly list: Effect.Effect<ReadonlyArray<ToolEntry>>
  readonly get: (name: string) => Effect.Effect<Tool, NotFound>
  /**
   * Validates `input` against the tool's parameters, then runs it; a tool that needs approval for it
   * is a Conflict (only an agent's call, once a human approved, runs it).
   */
  readonly execute: (
    name: string,
    input: unknown,
    caller: CallerContext
  ) => Effect.Effect<ToolExecution, NotFound | ValidationError | ExecutionFailed | DeclaredToolError | Conflict>
}>() {}

/** The span attributes of a tool run, as the OpenTelemetry GenAI semantic conventions name them ("execute_tool"). */
const toolSpanAttributes = (tool: Tool, callId: string | undefined) => ({
  "gen_ai.operation.name": "execute_tool",
  "gen_ai.tool.name": tool.name,
  "gen_ai.tool.type": "function",
  "gen_ai.tool.description": tool.description,
  ...(callId === undefined ? {} : { "gen_ai.tool.call.id": callId }),
  "tool.name": tool.name
})

/**
 * A result is sent as JSON (to the caller, or to the model as the tool's result): one JSON cannot carry
 * as it is (a BigInt, a function or a Map it would drop or empty, a cycle, Infinity, which would turn
 * into `null`) is the tool's failure, not the server's, checked as request bodies are (core/jsonValue).
 * A Date or a class instance passes: a result is only sent, never read back as what it was.
 */
const ensureJson = (tool: Tool, value: unknown): Effect.Effect<unknown, ExecutionFailed> =>
  Effect.suspend(() => {
    let problem: string | undefined
    try {
      const found = nonJsonValue(value, { strict: false })
      const issue = found === undefined
        ? jsonValueIssue(value)
        : { path: found.path, message: `is ${found.what} (${found.why})` }
      if (issue === undefined) JSON.stringify(value)
      else problem = issue.path.length === 0 ? issue.message : `at ${issue.path.join(".")}: ${issue.message}`
    } catch (error) {
      problem = messageOf(error)
    }
    return problem === undefined
      ? Effect.succeed(value === undefined ? null : value)
      : Effect.fail(new ExecutionFailed({ message: `Tool ${tool.name} failed: its result is not JSON (${problem})` }))
  })

type ToolFailure = ExecutionFailed | DeclaredToolError

/**
 * What a tool failed with, as its caller sees it: one of its declared errors keeps its status and
 * detail; anything else is `Tool <name> failed: <message>`. The span gets `error.type` (a tagged
 * error's tag), never its fields: a message made of them is marked with the one the span shows instead.
 */
const toolFailure = (tool: Tool, error: unknown): Effect.Effect<never, ToolFailure> => {
  const detail = errorDetailOf(error)
  const declared = detail === undefined ? undefined : tool.declaredErrors.find((candidate) => candidate.is(error))
  const failure = declared !== undefined && detail !== undefined
    ? new DeclaredToolError({ message: failureMessage(error, detail), status: declared.status, errorDetail: detail })
    : new ExecutionFailed({ message: `Tool ${tool.name} failed: ${failureMessage(error, detail)}` })
  const spanMessage = spanMessageOf(error, detail)
  markSpanMessage(
    failure,
    spanMessage === undefined || declared !== undefined ? spanMessage : `Tool ${tool.name} failed: ${spanMessage}`
  )
  return detail === undefined
    ? Effect.fail(failure)
    : Effect.zipRight(Effect.annotateCurrentSpan("error.type", detail._tag), Effect.fail(failure))
}

/**
 * Runs a decoded input through the tool with an abort signal tied to this fiber, in an
 * "execute_tool {name}" span (`callId`: the model's id for the call, when a model asked for it).
 */
export const runTool = (
  tool: Tool,
  input: unknown,
  caller: CallerContext,
  callId?: string
): Effect.Effect<unknown, ToolFailure> =>
  Effect.suspend(() => {
    const run = Effect.acquireUseRelease(
      Effect.sync(() => new AbortController()),
      (controller) =>
        tool.run(input, {
          ...caller,
          signal: controller.signal,
          ...(callId === undefined ? {} : { toolCallId: callId })
        }),
      (controller) => Effect.sync(() => controller.abort())
    ).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : toolFailure(tool, Cause.squash(cause))
      ),
      Effect.flatMap((value) => ensureJson(tool, value))
    )
    const span = { captureStackTrace: false, attributes: toolSpanAttributes(tool, callId) }
    return withoutFieldsInSpan(run, `execute_tool ${tool.name}`, span, markedSpanMessage)
  })

/** The tools the app serves, each with the agents that own it (the composition root gathers them). */
export class RegisteredTools extends Context.Tag("RegisteredTools")<RegisteredTools, ReadonlyArray<ToolEntry>>() {}

const byNameOf = (entries: ReadonlyArray<ToolEntry>) =>
  Effect.reduce(entries, new Map<string, ToolEntry>(), (byName, entry) => {
    const existing = byName.get(entry.tool.name)
    if (existing !== undefined && existing.tool !== entry.tool) {
      return Effect.fail(new DuplicateDefinition({ kind: "tool", id: entry.tool.name }))
    }
    return Effect.succeed(
      byName.set(entry.tool.name, { tool: entry.tool, agents: [...(existing?.agents ?? []), ...entry.agents] })
    )
  })

const makeToolRunner = (byName: ReadonlyMap<string, ToolEntry>) => {
  const list = Effect.succeed([...byName.values()])
  const get = (name: string) => Effect.map(getOrNotFound(byName, "Tool", name), (entry) => entry.tool)
  const execute = Effect.fn("ToolRunner.execute", { captureStackTrace: false })(
    function*(name: string, input: unknown, caller: CallerContext) {
      yield* Effect.annotateCurrentSpan("tool.name", name)
      const tool = yield* get(name)
      const decoded = tool.decode(input)
      if (decoded._tag === "Left") {
        return yield* ValidationError.fromIssues(decoded.left, ["input"])
      }
      if (tool.needsApproval !== undefined && (yield* tool.needsApproval(decoded.right, caller))) {
        return yield* new Conflict({ message: `Tool ${tool.name} needs approval` })
      }
      const started = Date.now()
      const result = yield* runTool(tool, decoded.right, caller)
      return {
        toolName: tool.name,
        result,
        executionTime: Date.now() - started,
        timestamp: new Date(started).toISOString()
      }
    }
  )
  return ToolRunner.of({ list, get, execute })
}

export const ToolRunnerLive: Layer.Layer<ToolRunner, DuplicateDefinition, RegisteredTools> = Layer.effect(
  ToolRunner,
  Effect.map(Effect.flatMap(RegisteredTools, byNameOf), makeToolRunner)
)
