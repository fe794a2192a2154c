import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  type ListToolsResult,
  McpError
} from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Either, identity, Runtime } from "effect"
import type { Caller } from "../auth/Ownership.js"
import { implementation, type McpCatalog } from "./catalog.js"

/** The MCP SDK side of McpExposure, in a module of its own so that the SDK loads with the first MCP request. */

const errorResult = (message: string): CallToolResult => ({ content: [{ type: "text", text: message }], isError: true })

const listTools = Effect.fn("McpExposure.listTools", { captureStackTrace: false })(
  (tools: McpCatalog): Effect.Effect<ListToolsResult> =>
    Effect.map(tools, (entries) => ({ tools: entries.map((entry) => entry.definition) }))
)

// A tool's failure is a tool result the model can read; an unknown tool is a protocol error.
const callTool = Effect.fn("McpExposure.callTool", { captureStackTrace: false })(
  function*(
    tools: McpCatalog,
    name: string,
    args: Record<string, unknown>,
    caller: Caller
  ): Effect.fn.Return<CallToolResult, McpError> {
    yield* Effect.annotateCurrentSpan("mcp.tool.name", name)
    const entry = (yield* tools).find((candidate) => candidate.definition.name === name)
    if (entry === undefined) return yield* Effect.fail(new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`))
    return yield* entry.call(args, caller).pipe(
      Effect.catchAll((error) => Effect.succeed(errorResult(error.message))),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(Effect.logError("MCP tool call failed", cause), errorResult("Internal server error"))
      )
    )
  }
)

// A fresh MCP server per request; its handlers run in the request's runtime, so their spans nest.
const mcpServer = (tools: McpCatalog, runtime: Runtime.Runtime<never>, caller: Caller) => {
  const run = <A>(effect: Effect.Effect<A, McpError>, signal: AbortSignal): Promise<A> =>
    Runtime.runPromise(runtime, Effect.either(effect), { signal }).then(Either.getOrThrowWith(identity))
  const server = new Server(implementation, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => run(listTools(tools), extra.signal))
  server.setRequestHandler(
    CallToolRequestSchema,
    (request, extra) => run(callTool(tools, request.params.name, request.params.arguments ?? {}, caller), extra.signal)
  )
  server.onerror = (error) => Runtime.runSync(runtime, Effect.logDebug("MCP request refused", error.message))
  return server
}

/** Answers one POST to the streamable HTTP endpoint (stateless: no session, JSON responses). */
export const serve = (tools: McpCatalog, request: Request, caller: Caller) =>
  Effect.acquireUseRelease(
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.promise(async () => {
        const server = mcpServer(tools, runtime, caller)
        const transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableJsonResponse: true
        })
        await server.connect(transport)
        return { server, transport }
      })),
    ({ transport }) => Effect.promise(() => transport.handleRequest(request)),
    // Closing the server closes the transport and aborts handlers still running (a client that left).
    ({ server }) => Effect.ignoreLogged(Effect.tryPromise(() => server.close()))
  )
