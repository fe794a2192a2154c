import {
  Etag,
  FileSystem,
  HttpApi,
  HttpApiBuilder,
  type HttpApp,
  HttpMiddleware,
  HttpPlatform,
  type HttpRouter,
  HttpServer,
  OpenApi,
  Path
} from "@effect/platform"
import { Context, Effect, Layer, Scope } from "effect"
import { AgentsHandlers } from "../agents/handlers.js"
import { ServiceApi } from "../Api.js"
import { AuthenticationLive } from "../auth/Authentication.js"
import { AuthPolicy } from "../auth/AuthPolicy.js"
import { withSecurity } from "../auth/openApiSecurity.js"
import { routeTable } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { ConsoleLive } from "../console/ConsoleRoute.js"
import { readAppCatalog } from "../docs/appCatalog.js"
import { FaviconLive } from "../docs/favicon.js"
import { DocsHandlers } from "../docs/handlers.js"
import { describeOpenApi } from "../docs/openApiDocument.js"
import { withAppExamples } from "../docs/openApiExamples.js"
import { SwaggerUiLive } from "../docs/swaggerUi.js"
import { withToolErrorStatuses } from "../docs/toolErrorStatuses.js"
import { HealthHandlers } from "../health/handlers.js"
import { McpHandlers } from "../mcp/handlers.js"
import { ObservabilityHandlers } from "../observability/handlers.js"
import { OpsHandlers } from "../ops/handlers.js"
import { RpcRouteLive } from "../rpc/RpcRoute.js"
import { storageKind } from "../storage/Sql.js"
import { ToolsHandlers } from "../tools/handlers.js"
import { WebhooksHandlers } from "../webhooks/handlers.js"
import { WorkflowsHandlers } from "../workflows/api/handlers.js"
import { SchedulesHandlers } from "../workflows/schedules/handlers.js"
import { WebSocketsHandlers } from "../ws/handlers.js"
import { isConsoleRead, untracedWhen } from "./ConsoleReads.js"
import { CrossOriginLive } from "./CrossOrigin.js"
import { ErrorMappingLive } from "./ErrorMapping.js"
import { withStartupBanner } from "./StartupBanner.js"
import { SwaggerUiAuthenticationLive } from "./SwaggerUiAuthentication.js"

const routes = routeTable(ServiceApi)

/** The API as served: its OpenAPI document marks the security each route has under this configuration. */
const ApiLive = (config: ServerConfigShape) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const secure = withSecurity(yield* AuthPolicy, routes)
    // Read when the document is first built (the transform is synchronous, and so are the reads).
    const catalog = yield* readAppCatalog
    const examples = withAppExamples(() => Effect.runSync(catalog))
    const toolErrors = withToolErrorStatuses(() => Effect.runSync(catalog))
    const api = ServiceApi.annotateContext(
      OpenApi.annotations({ transform: (spec) => secure(toolErrors(examples(describeOpenApi(spec)))) })
    )
    return HttpApiBuilder.api(api).pipe(Layer.provide(DocsHandlers(api, catalog)))
  })).pipe(
    Layer.provide([
      HealthHandlers,
      AgentsHandlers,
      ToolsHandlers,
      WorkflowsHandlers,
      SchedulesHandlers,
      WebhooksHandlers,
      McpHandlers,
      OpsHandlers,
      ObservabilityHandlers(storageKind(config.databaseUrl)),
      WebSocketsHandlers
    ]),
    Layer.provide(AuthenticationLive(routes))
  )

/**
 * What request fibers start from: the server's own services and the platform's, not every service of
 * the application. Handlers run in their group's context and middlewares close over what they use; a
 * request's context is copied each time a service is added to it (the request, its span, route,
 * parameters, caller), so its size is paid several times per request.
 */
const requestContext = Context.pick(
  Scope.Scope,
  HttpServer.HttpServer,
  HttpApi.Api,
  HttpPlatform.HttpPlatform,
  Etag.Generator,
  FileSystem.FileSystem,
  Path.Path
)

type RequestServices = Scope.Scope | HttpServer.HttpServer | HttpApi.Api | HttpRouter.HttpRouter.DefaultServices

/**
 * A server span is named by its method when it starts, before routing; once the router has matched, it
 * is renamed `<METHOD> <route>` (src/observability/serverSpanNames.ts).
 */
const spanName = (request: { readonly method: string }) => request.method

/**
 * HttpApiBuilder.serve(), with request fibers started from `requestContext`. The service's own console
 * and explorer reads are not traced unless `traceConsoleReads` (TRACE_CONSOLE_READS).
 */
const serveApi = (config: ServerConfigShape) => {
  const untraced = config.traceConsoleReads === true ? undefined : isConsoleRead(routes)
  return HttpApiBuilder.httpApp.pipe(
    Effect.map((app) =>
      Layer.scopedDiscard(
        Effect.flatMap(HttpServer.HttpServer, (server) =>
          untraced === undefined
            ? server.serve(app as HttpApp.Default)
            : server.serve(app as HttpApp.Default, untracedWhen(untraced)).pipe(
              HttpMiddleware.withTracerDisabledWhenEffect(untraced)
            )).pipe(
            Effect.provideService(HttpMiddleware.SpanNameGenerator, spanName),
            Effect.mapInputContext((context: Context.Context<RequestServices>) =>
              requestContext(context) as Context.Context<RequestServices>
            )
          )
      )
    ),
    Layer.unwrapEffect,
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
  )
}

/** An HttpServer provided from outside (the embedder's own). */
const providedServer = Layer.effect(HttpServer.HttpServer, HttpServer.HttpServer)

/**
 * The HTTP application: the API, its error mapping, CORS (none on console routes, which are guarded) and
 * (when enabled) Swagger UI at /ui, the console at /console, served on `server`. The server is built after everything else, just
 * before the app is attached to it: a server listening earlier accepts requests that no handler ever
 * answers (a health check during start-up would hang).
 */
export const HttpLive = <A extends HttpServer.HttpServer = HttpServer.HttpServer, E = never, R = HttpServer.HttpServer>(
  config: ServerConfigShape,
  server: Layer.Layer<A, E, R> = providedServer as unknown as Layer.Layer<A, E, R>
) =>
  serveApi(config).pipe(
    withStartupBanner(config),
    Layer.provideMerge(server),
    Layer.provide(config.enableSwaggerUI ? SwaggerUiLive("/ui") : Layer.empty),
    Layer.provide(FaviconLive),
    Layer.provide(ConsoleLive),
    // The RPC WebSocket (src/rpc): on the same router, so on the same port and behind the same middleware.
    Layer.provide(RpcRouteLive(config, routes)),
    Layer.provide(config.enableSwaggerUI ? SwaggerUiAuthenticationLive : Layer.empty),
    Layer.provide(ErrorMappingLive(config.bodyLimit)),
    Layer.provide(CrossOriginLive(config, routes)),
    Layer.provide(ApiLive(config))
  )
