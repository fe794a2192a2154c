import { HttpApiBuilder, HttpServer, OpenApi } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AgentsHandlers } from "../agents/handlers.js"
import { AuthenticationLive } from "../auth/Authentication.js"
import { AuthPolicy } from "../auth/AuthPolicy.js"
import { withSecurity } from "../auth/openApiSecurity.js"
import { routeTable } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { HealthHandlers } from "../health/handlers.js"
import { McpHandlers } from "../mcp/handlers.js"
import { ObservabilityHandlers } from "../observability/handlers.js"
import { OpsHandlers } from "../ops/handlers.js"
import { storageKind } from "../storage/Sql.js"
import { ToolsHandlers } from "../tools/handlers.js"
import { WorkflowsHandlers } from "../workflows/handlers.js"
import { WebSocketsHandlers } from "../ws/handlers.js"
import { ServiceApi } from "./Api.js"
import { describeOpenApi } from "./docs/openApiDocument.js"
import { DocsHandlers } from "./docs/handlers.js"
import { CrossOriginLive } from "./CrossOrigin.js"
import { ErrorMappingLive } from "./ErrorMapping.js"
import { SwaggerUiLive } from "./docs/swaggerUi.js"
import { SwaggerUiAuthenticationLive } from "./SwaggerUiAuthentication.js"

const routes = routeTable(ServiceApi)

/** The API as served: its OpenAPI document marks the security each route has under this configuration. */
const ApiLive = (config: ServerConfigShape) =>
  Layer.unwrapEffect(Effect.map(AuthPolicy, (policy) => {
    const secure = withSecurity(policy, routes, { production: config.production })
    const api = ServiceApi.annotateContext(OpenApi.annotations({ transform: (spec) => secure(describeOpenApi(spec)) }))
    return HttpApiBuilder.api(api).pipe(Layer.provide(DocsHandlers(api)))
  })).pipe(
    Layer.provide([
      HealthHandlers,
      AgentsHandlers,
      ToolsHandlers,
      WorkflowsHandlers,
      McpHandlers,
      OpsHandlers,
      ObservabilityHandlers(storageKind(config.databaseUrl)),
      WebSocketsHandlers
    ]),
    Layer.provide(AuthenticationLive(routes))
  )

/** An HttpServer provided from outside (the embedder's own). */
const providedServer = Layer.effect(HttpServer.HttpServer, HttpServer.HttpServer)

/**
 * The HTTP application: the API, its error mapping, CORS (none on console routes, which are guarded) and
 * (when enabled) Swagger UI at /ui, served on `server`. The server is built after everything else, just
 * before the app is attached to it: a server listening earlier accepts requests that no handler ever
 * answers (a health check during start-up would hang).
 */
export const HttpLive = <A extends HttpServer.HttpServer = HttpServer.HttpServer, E = never, R = HttpServer.HttpServer>(
  config: ServerConfigShape,
  server: Layer.Layer<A, E, R> = providedServer as unknown as Layer.Layer<A, E, R>
) =>
  HttpApiBuilder.serve().pipe(
    HttpServer.withLogAddress,
    Layer.provideMerge(server),
    Layer.provide(config.enableSwaggerUI ? SwaggerUiLive("/ui") : Layer.empty),
    Layer.provide(SwaggerUiAuthenticationLive),
    Layer.provide(ErrorMappingLive(config.bodyLimit)),
    Layer.provide(CrossOriginLive(config, routes)),
    Layer.provide(ApiLive(config))
  )
