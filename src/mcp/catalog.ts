import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Either, ParseResult, Schema } from "effect"
import type { AgentRegistry } from "../agents/AgentRegistry.js"
import { type AgentSummary, ApprovalsRequest, type TextResult } from "../agents/AgentsSchemas.js"
import type { Caller } from "../auth/Ownership.js"
import { type Conflict, type ExecutionFailed, type NotFound, ValidationError } from "../core/errors.js"
import { serviceInfo } from "../core/serviceInfo.js"
import type { JsonSchema } from "../json-schema/JsonSchemaValidator.js"
import type { ToolEntry, ToolRunner } from "../tools/ToolRunner.js"

/** The MCP server's name and version, as announced to clients and listed by GET /mcp/servers. */
export const implementation = {
  name: serviceInfo.title,
  version: serviceInfo.version,
  description: "This service's tools, and each of its agents as a tool named agent_<id>"
}

export type CallFailure = ValidationError | ExecutionFailed | NotFound | Conflict

/** A tool as MCP clients see it, and how to call it. */
export interface McpToolEntry {
  readonly definition: McpTool
  readonly call: (args: Record<string, unknown>, caller: Caller) => Effect.Effect<CallToolResult, CallFailure>
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const jsonResult = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  ...(isRecord(value) ? { structuredContent: value } : {})
})

// MCP arguments are always an object and clients reject a listing with a non-object input schema:
// a root without a type (a union of objects) gets one, a tool taking anything else is left out.
const objectSchema = (parameters: JsonSchema): McpTool["inputSchema"] | undefined =>
  parameters.type === "object"
    ? (parameters as McpTool["inputSchema"])
    : parameters.type === undefined
    ? { ...parameters, type: "object" }
    : undefined

const toolEntry = (runner: ToolRunner["Type"]) => ({ tool }: ToolEntry): Array<McpToolEntry> => {
  const inputSchema = objectSchema(tool.parameters)
  if (inputSchema === undefined) return []
  return [{
    definition: { name: tool.name, description: tool.description, inputSchema },
    call: (args, caller) =>
      runner.execute(tool.name, args, { context: {}, user: caller.user }).pipe(
        Effect.map((execution) => jsonResult(execution.result)),
        // An error the tool declared is a result the model reads, as an agent's model does.
        Effect.catchTag("DeclaredToolError", (error) =>
          Effect.succeed({
            content: [{ type: "text" as const, text: error.message }],
            structuredContent: { error: { _tag: error.errorDetail._tag, message: error.message } },
            isError: true
          }))
      )
  }]
}

const AgentArguments = Schema.Struct({
  input: Schema.optional(Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))),
  conversationId: Schema.optional(Schema.String),
  approvals: Schema.optional(ApprovalsRequest.fields.options.fields.approvals)
}).pipe(Schema.filter(({ approvals, input }) =>
  (input === undefined) !== (approvals === undefined) || {
    path: ["input"],
    message: input === undefined
      ? "is missing"
      : "must be left out when approvals (the answers to a call's pendingApprovals) are given"
  }
))
const decodeAgentArguments = Schema.decodeUnknownEither(AgentArguments, { errors: "all" })

const agentInputSchema: McpTool["inputSchema"] = {
  type: "object",
  properties: {
    input: { type: "string" },
    conversationId: { type: "string" },
    approvals: {
      type: "array",
      description: "instead of input: answers to every pending approval of an earlier call, which then goes on",
      items: {
        type: "object",
        properties: { approvalId: { type: "string" }, approved: { type: "boolean" }, reason: { type: "string" } },
        required: ["approvalId", "approved"]
      }
    }
  },
  anyOf: [{ required: ["input"] }, { required: ["approvals"] }]
}

/** An answer as MCP clients read it: the text, or the approvals it waits for (issue #32). */
const agentResult = (result: TextResult): CallToolResult =>
  result.pendingApprovals === undefined || result.pendingApprovals.length === 0
    ? { content: [{ type: "text", text: result.text }] }
    : {
      content: [{
        type: "text",
        text: `Waiting for approval: ${
          result.pendingApprovals.map((one) =>
            `${one.toolName} ${JSON.stringify(one.input)} (approvalId ${one.approvalId})`
          ).join(", ")
        }. Call this tool again with approvals to go on.`
      }],
      structuredContent: { finishReason: result.finishReason, pendingApprovals: result.pendingApprovals }
    }

const agentEntry = (agents: AgentRegistry["Type"]) => (agent: AgentSummary): McpToolEntry => ({
  definition: {
    name: `agent_${agent.id}`,
    description: `Ask the agent ${agent.name}: ${agent.description}`,
    inputSchema: agentInputSchema
  },
  call: (args, caller) =>
    Either.match(decodeAgentArguments(args), {
      onLeft: (error) => Effect.fail(ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error))),
      onRight: ({ approvals, conversationId, input }) =>
        Effect.map(
          agents.text(agent.id, {
            ...(input === undefined ? {} : { input }),
            options: {
              ...(conversationId ? { conversationId } : {}),
              ...(approvals === undefined ? {} : { approvals }),
              ...(caller.owned && caller.userId !== null ? { userId: caller.userId } : {})
            },
            user: caller.user,
            // Under authentication the conversation is the caller's, as over HTTP.
            ...(caller.owned ? { owner: { userId: caller.userId } } : {})
          }),
          agentResult
        ).pipe(
          // A guardrail's block is a result the caller reads, as a declared tool error is.
          Effect.catchTag("GuardrailBlocked", (error) =>
            Effect.succeed({
              content: [{ type: "text" as const, text: error.message }],
              structuredContent: { error: { _tag: error._tag, message: error.message, guardrail: error.guardrail } },
              isError: true
            }))
        )
    })
})

/** The runner's tools, then one `agent_<id>` tool per agent; on a name clash the first one wins. */
export const mcpTools = (
  runner: ToolRunner["Type"],
  agents: AgentRegistry["Type"]
): Effect.Effect<ReadonlyArray<McpToolEntry>> =>
  Effect.map(Effect.all([runner.list, agents.list]), ([tools, summaries]) => {
    const byName = new Map<string, McpToolEntry>()
    for (const entry of [...tools.flatMap(toolEntry(runner)), ...summaries.map(agentEntry(agents))]) {
      if (!byName.has(entry.definition.name)) byName.set(entry.definition.name, entry)
    }
    return [...byName.values()]
  })

export type McpCatalog = ReturnType<typeof mcpTools>
