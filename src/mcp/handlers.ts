import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServiceApi } from "../Api.js"
import { CurrentCaller } from "../auth/Authentication.js"
import { McpExposure } from "./McpExposure.js"

// Built from the body text rather than the raw stream: the body limit may already have read a chunked body.
const toWebRequest = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(request.method === "POST" ? Effect.orDie(request.text) : Effect.succeed(undefined), (body) =>
    new Request(
      Option.getOrElse(HttpServerRequest.toURL(request), () => new URL(request.url, "http://localhost")),
      { method: request.method, headers: request.headers, body }
    ))

export const McpHandlers = HttpApiBuilder.group(ServiceApi, "mcp", (handlers) =>
  Effect.gen(function*() {
    const mcp = yield* McpExposure
    const transport = (
      { path, request }: {
        readonly path: { readonly id: string }
        readonly request: HttpServerRequest.HttpServerRequest
      }
    ) =>
      Effect.all([toWebRequest(request), CurrentCaller]).pipe(
        Effect.flatMap(([web, caller]) => mcp.handle(path.id, web, caller)),
        Effect.map(HttpServerResponse.fromWeb)
      )
    return handlers
      .handle("listMcpServers", () => mcp.servers)
      .handle("getMcpServer", ({ path }) => mcp.server(path.id))
      .handle("mcpPost", transport)
      .handle("mcpGet", transport)
      .handle("mcpDelete", transport)
  }))
