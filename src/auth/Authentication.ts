import { HttpApiMiddleware, HttpRouter, HttpServerRequest } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import { Unauthorized } from "../http/Errors.js"
import { AuthPolicy, bearerToken } from "./AuthPolicy.js"
import { type RouteClass, type RouteEntry } from "./RouteClass.js"

/** The authenticated user of the request, or null. */
export class CurrentUser extends Context.Tag("CurrentUser")<CurrentUser, unknown>() {}

/** Runs on every API group: decides from the route's class whether the request may proceed, and as whom. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentUser
}) {}

export const CONSOLE_KEY_HEADER = "x-console-access-key"

export const AuthenticationLive = (routes: ReadonlyArray<RouteEntry>) =>
  Layer.effect(
    Authentication,
    Effect.gen(function*() {
      const policy = yield* AuthPolicy
      const classes = new Map(routes.map((route) => [`${route.method} ${route.path}`, route.routeClass]))
      return Effect.gen(function*() {
        const { route } = yield* HttpRouter.RouteContext
        const request = yield* HttpServerRequest.HttpServerRequest
        const routeClass: RouteClass = classes.get(`${route.method} ${route.path}`) ?? "custom"
        return yield* policy.authorize({
          routeClass,
          method: request.method,
          path: request.url.split("?", 1)[0],
          token: bearerToken(request.headers["authorization"]),
          consoleKey: Option.fromNullable(request.headers[CONSOLE_KEY_HEADER])
        })
      })
    })
  )

