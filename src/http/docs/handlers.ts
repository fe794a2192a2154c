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
      const spec = OpenApi.fromApi(api)
      const document = HttpServerResponse.unsafeJson(spec)
      const landing = HttpServerResponse.html(landingPage(spec, { swaggerUI: config.enableSwaggerUI }))
      return handlers
        .handle("landing", () => Effect.succeed(landing))
        .handle("openApi", () => Effect.succeed(document))
    }))
