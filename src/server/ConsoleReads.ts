import { type HttpMiddleware, HttpServerRequest } from "@effect/platform"
import { Context, Effect } from "effect"
import type { RouteEntry } from "../auth/RouteClass.js"
import { ASSETS_PATH } from "../console/ConsoleRoute.js"

/** The pages and assets of the console and the explorer, which are not API routes. */
const UI_ROUTES = ["/console", `${ASSETS_PATH}/:name`, "/ui", "/favicon.ico"]

const templatePattern = (path: string) =>
  path.split("/").map((segment) => segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("/")

/**
 * Whether a request is one of the service's own console or explorer reads (docs/decisions.md, "Issue
 * #29: traces named by route"): a GET or HEAD of a console route (/observability/*, /api/logs, /metrics,
 * /updates, the console's WebSockets), of a documentation route (/, /doc), or of the console's and
 * Swagger UI's pages and assets.
 */
export const isConsoleRead = (
  routes: ReadonlyArray<RouteEntry>
): (request: HttpServerRequest.HttpServerRequest) => boolean => {
  const templates = routes
    .filter((route) =>
      route.method === "GET" && (route.routeClass === "console" || route.routeClass === "documentation")
    )
    .map((route) => route.path)
  const pattern = new RegExp(`^(?:${[...templates, ...UI_ROUTES].map(templatePattern).join("|")})/?$`)
  return (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return false
    const query = request.url.indexOf("?")
    return pattern.test(query === -1 ? request.url : request.url.slice(0, query))
  }
}

/**
 * Runs the requests `untraced` picks with tracing off: not only their server span (which
 * HttpMiddleware.currentTracerDisabledWhen skips) but also the spans their handlers make, which would
 * otherwise each start a trace of their own.
 */
export const untracedWhen =
  (untraced: (request: HttpServerRequest.HttpServerRequest) => boolean): HttpMiddleware.HttpMiddleware => (app) => {
    const withoutTracing = Effect.withTracerEnabled(app, false)
    // Read straight from the fiber's context: this runs on every request.
    return Effect.withFiberRuntime((fiber) =>
      untraced(Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)) ? withoutTracing : app
    )
  }
