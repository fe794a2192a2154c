import { HttpApiBuilder, HttpServerRequest, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { ServerConfig } from "../config/ServerConfig.js"
import type { AppCatalog } from "./appCatalog.js"
import { landingPage, socketOrigin } from "./landingPage.js"
import { withPageSecurity } from "./pageSecurity.js"

/**
 * `api` is the API as served (its OpenAPI annotations reflect the active configuration); `catalog`
 * reads what the app serves (see appCatalog.ts).
 */
export const DocsHandlers = (api: typeof ServiceApi, catalog: Effect.Effect<AppCatalog>) =>
  HttpApiBuilder.group(ServiceApi, "docs", (handlers) =>
    Effect.gen(function*() {
      const config = yield* ServerConfig
      // Built on the first request that needs it: most processes never serve it, and start-up would pay.
      const spec = yield* Effect.cached(Effect.sync(() => OpenApi.fromApi(api)))
      const document = yield* Effect.cached(Effect.map(spec, HttpServerResponse.unsafeJson))
      const landing = yield* Effect.cached(
        Effect.zipWith(spec, catalog, (spec, catalog) =>
          landingPage(spec, catalog, { swaggerUI: config.enableSwaggerUI }))
      )
      const fallbackHost = `${config.host}:${config.port}`
      return handlers
        .handle("landing", () =>
          Effect.zipWith(landing, HttpServerRequest.HttpServerRequest, (page, request) =>
            withPageSecurity(HttpServerResponse.html(page.render(socketOrigin(request.headers, fallbackHost))), {
              inlineStyles: false
            })))
        .handle("openApi", () =>
          document)
    }))
