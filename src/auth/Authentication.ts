import { HttpApiMiddleware, HttpRouter, HttpServerRequest } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import { Unauthorized } from "../http/Errors.js"
import { AuthPolicy, bearerToken } from "./AuthPolicy.js"
import { type RouteClass, type RouteEntry } from "./RouteClass.js"

import type { Caller } from "./Ownership.js"

/** Who is calling: the authenticated user (or null) and whose records it may see and change. */
export class CurrentCaller extends Context.Tag("CurrentCaller")<CurrentCaller, Caller>() {}

/** The authenticated user of the request, or null. */
export const CurrentUser = Effect.map(CurrentCaller, (caller) => caller.user)

/** Runs on every API group: decides from the route's class whether the request may proceed, and as whom. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentCaller
}) {}

export const CONSOLE_KEY_HEADER = "x-console-access-key"

export const AuthenticationLive = (routes: ReadonlyArray<RouteEntry>) =>
  Layer.effect(
    Authentication,
    Effect.gen(function*() {
      const policy = yield* AuthPolicy
      const classes = new Map(routes.map((route) => [`${route.method} ${route.path}`, route.routeClass]))
      // Router routes are created once, so each one's class is looked up once.
      const classOfRoute = new WeakMap<HttpRouter.Route<unknown, unknown>, RouteClass>()
      const routeClassOf = (route: HttpRouter.Route<unknown, unknown>): RouteClass => {
        let routeClass = classOfRoute.get(route)
        if (routeClass === undefined) {
          routeClass = classes.get(`${route.method} ${route.path}`) ?? "custom"
          classOfRoute.set(route, routeClass)
        }
        return routeClass
      }
      // Read straight from the fiber's context: this runs on every request.
      return Effect.withFiberRuntime((fiber) => {
        const { route } = Context.unsafeGet(fiber.currentContext, HttpRouter.RouteContext)
        const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
        const url = request.url
        const query = url.indexOf("?")
        return policy.authorizeCaller({
          routeClass: routeClassOf(route as HttpRouter.Route<unknown, unknown>),
          method: request.method,
          path: query === -1 ? url : url.slice(0, query),
          token: bearerToken(request.headers["authorization"]),
          consoleKey: Option.fromNullable(request.headers[CONSOLE_KEY_HEADER])
        })
      })
    })
  )
