import {
  HttpApiBuilder,
  type HttpApp,
  HttpMiddleware,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Context, Effect, Function } from "effect"
import { ServiceApi } from "../Api.js"
import { consoleRefusal } from "../auth/ConsoleGuard.js"
import type { RouteEntry } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import type { Forbidden, Unauthorized } from "../core/errors.js"

/**
 * Whether a request addresses a console route, with any method (a CORS preflight is an OPTIONS). It is
 * decided by a router of the console routes, so paths match exactly as the API's router matches them
 * (case, trailing and duplicate slashes, percent-encoding).
 */
const consoleRouteMatcher = (routes: ReadonlyArray<RouteEntry>) => {
  const consolePaths = new Set(routes.filter((route) => route.routeClass === "console").map((route) => route.path))
  const router = [...consolePaths].reduce(
    (router, path) => HttpRouter.all(router, path as HttpRouter.PathInput, HttpServerResponse.empty()),
    HttpRouter.empty
  )
  const firstSegments = new Set([...consolePaths].map(firstSegment))
  return Effect.map(HttpRouter.toHttpApp(router), (app) => {
    const matches = app.pipe(Effect.as(true), Effect.catchTag("RouteNotFound", () => Effect.succeed(false)))
    // Most requests are not for the console: a cheap look at the first segment spares them the router's
    // RouteNotFound (an error object with a stack, per request).
    return {
      surelyNot: (url: string) => {
        const first = firstSegment(url)
        return first !== undefined && !firstSegments.has(first)
      },
      matches
    }
  })
}

/** The first path segment as the router compares it (decoded, lower-cased); undefined when undecodable. */
const firstSegment = (url: string): string | undefined => {
  const query = url.indexOf("?")
  const path = query === -1 ? url : url.slice(0, query)
  if (!path.includes("%")) {
    let start = 0
    while (path.charCodeAt(start) === 47) start++
    const end = path.indexOf("/", start)
    return path.slice(start, end === -1 ? path.length : end).toLowerCase()
  }
  try {
    return decodeURIComponent(path).toLowerCase().split("/").find((segment) => segment !== "") ?? ""
  } catch {
    return undefined
  }
}

/**
 * The configured CORS for every route except console routes, which answer no CORS at all and go through
 * the console guard (own origin, own Host, a non-form header on writes) before anything else.
 */
export const CrossOriginLive = (config: ServerConfigShape, routes: ReadonlyArray<RouteEntry>) =>
  HttpApiBuilder.middleware(
    ServiceApi,
    Effect.gen(function*() {
      const consoleRoute = yield* consoleRouteMatcher(routes)
      const refusal = consoleRefusal({ host: config.host, production: config.production })
      const cors: HttpMiddleware.HttpMiddleware = config.cors === false
        ? Function.identity
        // Absent fields must be left out, not set to undefined: the CORS middleware reads them as given.
        : HttpMiddleware.cors(JSON.parse(JSON.stringify(config.cors)))
      const guarded = (app: HttpApp.Default) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const refused = refusal({ method: request.method, headers: request.headers })
          return refused !== undefined ? Effect.fail(refused) : app
        })
      return (app: HttpApp.Default) => {
        const withCors = cors(app)
        const consoleOrNot = Effect.flatMap(consoleRoute.matches, (isConsole) => (isConsole ? guarded(app) : withCors))
        // Decided from the fiber's context without an effect per check: this runs on every request.
        return Effect.withFiberRuntime<
          HttpServerResponse.HttpServerResponse,
          Forbidden | Unauthorized,
          HttpServerRequest.HttpServerRequest
        >((fiber) =>
          consoleRoute.surelyNot(Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest).url)
            ? withCors
            : consoleOrNot
          // Forbidden is declared by the console groups, whose routes alone can meet it.
        ) as HttpApp.Default<Unauthorized>
      }
    })
  )
