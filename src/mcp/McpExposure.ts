import { OpenApi } from "@effect/platform"
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
import { Cause, Context, Effect, Either, identity, Layer, Option, Runtime } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import { NotFound } from "../errors.js"
import { ServiceApi } from "../http/Api.js"
import { ToolRunner } from "../tools/ToolRunner.js"
import { mcpTools } from "./catalog.js"
import type { McpServerInfo } from "./McpApi.js"

export class McpExposure extends Context.Tag("McpExposure")<McpExposure, {
  readonly servers: Effect.Effect<ReadonlyArray<McpServerInfo>>
  readonly server: (id: string) => Effect.Effect<McpServerInfo, NotFound>
  /** Answers one request to the server's streamable HTTP endpoint. */
  /** `user` is the authenticated caller; tools and agents run as them. */
  readonly handle: (id: string, request: Request, user: unknown) => Effect.Effect<Response, NotFound>
}>() {}

const SERVER_ID = "default"

const implementation = {
  name: Option.getOrElse(Context.getOption(ServiceApi.annotations, OpenApi.Title), () => "service"),
  version: Option.getOrElse(Context.getOption(ServiceApi.annotations, OpenApi.Version), () => "1.0.0"),
  description: "This service's tools, and each of its agents as a tool named agent_<id>"
}

const errorResult = (message: string): CallToolResult => ({ content: [{ type: "text", text: message }], isError: true })

// Stateless: there is no SSE stream to open (GET) nor session to end (DELETE); the MCP spec answers 405.
const methodNotAllowed = () =>
  new Response(
    JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }),
    { status: 405, headers: { allow: "POST", "content-type": "application/json" } }
  )

export const McpExposureLive = Layer.effect(
  McpExposure,
  Effect.gen(function*() {
    const tools = mcpTools(yield* ToolRunner, yield* AgentRegistry)

    const find = (id: string) => (id === SERVER_ID ? Effect.void : Effect.fail(NotFound.of("MCP server", id)))

    const info = Effect.map(tools, (entries): McpServerInfo => ({
      id: SERVER_ID,
      ...implementation,
      transport: { type: "streamable-http", endpoint: `/mcp/${SERVER_ID}/mcp` },
      toolCount: entries.length
    }))

    const listTools: Effect.Effect<ListToolsResult> = Effect.map(tools, (entries) => ({
      tools: entries.map((entry) => entry.definition)
    })).pipe(Effect.withSpan("McpExposure.listTools", { captureStackTrace: false }))

    // A tool's failure is a tool result the model can read; an unknown tool is a protocol error.
    const callTool = (name: string, args: Record<string, unknown>, user: unknown): Effect.Effect<CallToolResult, McpError> =>
      Effect.gen(function*() {
        const entry = (yield* tools).find((candidate) => candidate.definition.name === name)
        if (entry === undefined) return yield* Effect.fail(new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`))
        return yield* entry.call(args, user).pipe(
          Effect.catchAll((error) => Effect.succeed(errorResult(error.message))),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.as(Effect.logError("MCP tool call failed", cause), errorResult("Internal server error"))
          )
        )
      }).pipe(Effect.withSpan("McpExposure.callTool", { captureStackTrace: false, attributes: { "mcp.tool.name": name } }))

    // A fresh MCP server per request; its handlers run in the request's runtime, so their spans nest.
    const mcpServer = (runtime: Runtime.Runtime<never>, user: unknown) => {
      const run = <A>(effect: Effect.Effect<A, McpError>, signal: AbortSignal): Promise<A> =>
        Runtime.runPromise(runtime, Effect.either(effect), { signal }).then(Either.getOrThrowWith(identity))
      const server = new Server(implementation, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => run(listTools, extra.signal))
      server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
        run(callTool(request.params.name, request.params.arguments ?? {}, user), extra.signal))
      server.onerror = (error) => Runtime.runSync(runtime, Effect.logDebug("MCP request refused", error.message))
      return server
    }

    const serve = (request: Request, user: unknown) =>
      Effect.acquireUseRelease(
        Effect.flatMap(Effect.runtime<never>(), (runtime) =>
          Effect.promise(async () => {
            const server = mcpServer(runtime, user)
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

    return McpExposure.of({
      servers: Effect.map(info, (server) => [server]).pipe(Effect.withSpan("McpExposure.servers", { captureStackTrace: false })),
      server: (id) =>
        Effect.zipRight(find(id), info).pipe(
          Effect.withSpan("McpExposure.server", { captureStackTrace: false, attributes: { "mcp.server.id": id } })
        ),
      handle: (id, request, user) =>
        Effect.zipRight(find(id), request.method === "POST" ? serve(request, user) : Effect.sync(methodNotAllowed)).pipe(
          Effect.withSpan("McpExposure.handle", { captureStackTrace: false, attributes: { "mcp.server.id": id, "http.method": request.method } })
        )
    })
  })
)
