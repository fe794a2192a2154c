import { HttpApiBuilder, HttpApiSwagger, HttpServer } from "@effect/platform"
import { Layer } from "effect"
import { AgentsHandlers } from "../agents/handlers.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { McpHandlers } from "../mcp/handlers.js"
import { ToolsHandlers } from "../tools/handlers.js"
import { WorkflowsHandlers } from "../workflows/handlers.js"
import { ServiceApi } from "./Api.js"
import { DocsHandlers } from "./docs/handlers.js"
import { ErrorMappingLive } from "./ErrorMapping.js"

const ApiLive = HttpApiBuilder.api(ServiceApi).pipe(Layer.provide([DocsHandlers, AgentsHandlers, ToolsHandlers, WorkflowsHandlers, McpHandlers]))

const corsLayer = (config: ServerConfigShape) =>
  config.cors === false
    ? Layer.empty
    // Absent fields must be left out, not set to undefined: the CORS middleware reads them as given.
    : HttpApiBuilder.middlewareCors(JSON.parse(JSON.stringify(config.cors)))

/** The HTTP application: the API, its error mapping, CORS and (when enabled) Swagger UI at /ui. */
export const HttpLive = (config: ServerConfigShape) =>
  HttpApiBuilder.serve().pipe(
    Layer.provide(config.enableSwaggerUI ? HttpApiSwagger.layer({ path: "/ui" }) : Layer.empty),
    Layer.provide(ErrorMappingLive(config.bodyLimit)),
    Layer.provide(corsLayer(config)),
    Layer.provide(ApiLive),
    HttpServer.withLogAddress
  )
