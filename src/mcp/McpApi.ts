import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { NotFound } from "../http/Errors.js"
import { McpServerInfo } from "./McpSchemas.js"

const IdPath = Schema.Struct({ id: Schema.String })

const JsonRpc = Schema.Unknown.annotations({ identifier: "JsonRpcMessage", description: "JSON-RPC 2.0 message(s)" })
// What the MCP transport sends (a JSON-RPC error, not the service's envelope): documentation only.
const MethodNotAllowed = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  error: Schema.Struct({ code: Schema.Number, message: Schema.String }),
  id: Schema.Null
}).annotations({ description: "A JSON-RPC error: method not allowed" })

// No payload schema: the MCP transport reads the body itself, so the builder must not.
const transport = <const Name extends string, const Method extends "POST" | "GET" | "DELETE">(
  name: Name,
  method: Method
) =>
  HttpApiEndpoint.make(method)(name, "/mcp/:id/mcp").setPath(IdPath).addError(NotFound)
    .annotate(RouteClassAnnotation, "execution")

export class McpApi extends HttpApiGroup.make("mcp")
  .add(
    HttpApiEndpoint.get("listMcpServers", "/mcp/servers").addSuccess(Success(Schema.Array(McpServerInfo)))
      .annotate(OpenApi.Summary, "The MCP servers this service exposes")
  )
  .add(
    HttpApiEndpoint.get("getMcpServer", "/mcp/servers/:id").setPath(IdPath).addSuccess(Success(McpServerInfo))
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One MCP server")
  )
  .add(
    transport("mcpPost", "POST").addSuccess(JsonRpc)
      .annotate(OpenApi.Summary, "MCP streamable HTTP (stateless): a JSON-RPC request body, its JSON-RPC response")
      .annotate(
        OpenApi.Description,
        "Tools are this service's tools and its agents as `agent_<id>`. " +
          "The body is a JSON-RPC message or batch; notifications only get 202 with no body."
      )
  )
  .add(
    transport("mcpGet", "GET").addSuccess(MethodNotAllowed, { status: 405 })
      .annotate(OpenApi.Summary, "Always 405: the server is stateless and opens no SSE stream")
  )
  .add(
    transport("mcpDelete", "DELETE").addSuccess(MethodNotAllowed, { status: 405 })
      .annotate(OpenApi.Summary, "Always 405: the server is stateless and has no session to end")
  )
  .annotate(OpenApi.Title, "MCP")
  .annotate(RouteClassAnnotation, "discovery")
  .middleware(Authentication)
{}
