import { Context, Effect, Layer } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import type { Caller } from "../auth/Ownership.js"
import { NotFound } from "../core/errors.js"
import { ToolRunner } from "../tools/ToolRunner.js"
import { implementation, mcpTools } from "./catalog.js"
import type { McpServerInfo } from "./McpSchemas.js"

export class McpExposure extends Context.Tag("McpExposure")<McpExposure, {
  readonly servers: Effect.Effect<ReadonlyArray<McpServerInfo>>
  readonly server: (id: string) => Effect.Effect<McpServerInfo, NotFound>
  /** Answers one request to the server's streamable HTTP endpoint. */
  /** Tools and agents run as the caller (its conversations are its own). */
  readonly handle: (id: string, request: Request, caller: Caller) => Effect.Effect<Response, NotFound>
}>() {}

/** The one MCP server: every tool and agent, at /mcp/default/mcp. */
export const SERVER_ID = "default"

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
    // The MCP SDK (and the zod schemas it builds at import) is loaded by the first MCP request.
    const sdk = yield* Effect.cached(Effect.promise(() => import("./mcpServer.js")))

    const find = (id: string) => (id === SERVER_ID ? Effect.void : Effect.fail(NotFound.of("MCP server", id)))

    const info = Effect.map(tools, (entries): McpServerInfo => ({
      id: SERVER_ID,
      ...implementation,
      transport: { type: "streamable-http", endpoint: `/mcp/${SERVER_ID}/mcp` },
      toolCount: entries.length
    }))

    const serve = (request: Request, caller: Caller) => Effect.flatMap(sdk, (mcp) => mcp.serve(tools, request, caller))

    return McpExposure.of({
      servers: Effect.map(info, (server) => [server]).pipe(
        Effect.withSpan("McpExposure.servers", { captureStackTrace: false })
      ),
      server: Effect.fn("McpExposure.server", { captureStackTrace: false })(function*(id: string) {
        yield* Effect.annotateCurrentSpan("mcp.server.id", id)
        yield* find(id)
        return yield* info
      }),
      handle: Effect.fn("McpExposure.handle", { captureStackTrace: false })(
        function*(id: string, request: Request, caller: Caller) {
          yield* Effect.annotateCurrentSpan({ "mcp.server.id": id, "http.method": request.method })
          yield* find(id)
          return request.method === "POST" ? yield* serve(request, caller) : methodNotAllowed()
        }
      )
    })
  })
)
