import { HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { landingPage } from "./landingPage.js"

export const DocsHandlers = HttpApiBuilder.group(ServiceApi, "docs", (handlers) =>
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const spec = OpenApi.fromApi(ServiceApi)
    const document = HttpServerResponse.unsafeJson(spec)
    const landing = HttpServerResponse.html(landingPage(spec, { swaggerUI: config.enableSwaggerUI }))
    return handlers
      .handle("landing", () => Effect.succeed(landing))
      .handle("openApi", () => Effect.succeed(document))
  }))
