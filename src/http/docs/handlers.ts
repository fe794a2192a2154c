import { HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { landingPage } from "./landingPage.js"

/** `api` is the API as served (its OpenAPI annotations reflect the active configuration). */
export const DocsHandlers = (api: typeof ServiceApi) =>
  HttpApiBuilder.group(ServiceApi, "docs", (handlers) =>
    Effect.gen(function*() {
      const config = yield* ServerConfig
      // Built on the first request that needs it: most processes never serve it, and start-up would pay.
      const spec = yield* Effect.cached(Effect.sync(() => OpenApi.fromApi(api)))
      const document = yield* Effect.cached(Effect.map(spec, HttpServerResponse.unsafeJson))
      const landing = yield* Effect.cached(
        Effect.map(spec, (spec) => HttpServerResponse.html(landingPage(spec, { swaggerUI: config.enableSwaggerUI })))
      )
      return handlers
        .handle("landing", () => landing)
        .handle("openApi", () => document)
    }))
