import { HttpApiBuilder, type HttpApp, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Context, Effect, Option } from "effect"
import { ServiceApi } from "../Api.js"
import { AuthPolicy, bearerToken } from "../auth/AuthPolicy.js"
import type { Unauthorized } from "../core/errors.js"

/** Swagger UI is served beside the API groups; it is a documentation route like /doc. */
export const SwaggerUiAuthenticationLive = HttpApiBuilder.middleware(
  ServiceApi,
  Effect.gen(function*() {
    const policy = yield* AuthPolicy
    const authorized = (app: HttpApp.Default, request: HttpServerRequest.HttpServerRequest, path: string) =>
      Effect.zipRight(
        policy.authorize({
          routeClass: "documentation",
          method: request.method,
          path,
          token: bearerToken(request.headers["authorization"]),
          consoleKey: Option.none()
        }),
        app
      )
    // Decided from the fiber's context without an effect per check: this runs on every request.
    return (app: HttpApp.Default) =>
      Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, Unauthorized, HttpServerRequest.HttpServerRequest>(
        (fiber) => {
          const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
          if (!request.url.startsWith("/ui")) return app
          const path = request.url.split("?", 1)[0]
          return path === "/ui" || path === "/ui/" ? authorized(app, request, path) : app
        }
      )
  })
)
