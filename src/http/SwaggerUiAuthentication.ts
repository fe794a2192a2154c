import { HttpApiBuilder, type HttpApp, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { AuthPolicy, bearerToken } from "../auth/AuthPolicy.js"
import { ServiceApi } from "./Api.js"

/** Swagger UI is served beside the API groups; it is a documentation route like /doc. */
export const SwaggerUiAuthenticationLive = HttpApiBuilder.middleware(
  ServiceApi,
  Effect.gen(function*() {
    const policy = yield* AuthPolicy
    return (app: HttpApp.Default) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = request.url.split("?", 1)[0]
        if (path === "/ui" || path === "/ui/") {
          yield* policy.authorize({
            routeClass: "documentation",
            method: request.method,
            path,
            token: bearerToken(request.headers["authorization"]),
            consoleKey: Option.none()
          })
        }
        return yield* app
      })
  })
)
