import { HttpApi, type HttpApiGroup } from "@effect/platform"
import { Context } from "effect"

/**
 * How a route is protected (spec "Authentication"): execution routes need a token when JWT is configured;
 * management, documentation, discovery and custom ones only with `defaultPrivate`; console routes use
 * the console key instead. Probes (`/health`, `/ready`) are always public: a load balancer has no token.
 */
export type RouteClass = "execution" | "management" | "documentation" | "discovery" | "console" | "probe" | "custom"

/** The annotation every endpoint (or its group) carries. */
export class RouteClassAnnotation extends Context.Tag("RouteClass")<RouteClassAnnotation, RouteClass>() {}

export interface RouteEntry {
  readonly method: string
  readonly path: string
  readonly operationId: string
  readonly routeClass: RouteClass
}

/** Every endpoint of the API with its class; an endpoint without one is "custom". */
export const routeTable = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyArray<RouteEntry> => {
  const entries: Array<RouteEntry> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations }) =>
      entries.push({
        method: endpoint.method,
        path: endpoint.path,
        operationId: `${group.identifier}.${endpoint.name}`,
        routeClass: Context.getOrElse(mergedAnnotations, RouteClassAnnotation, () => "custom" as const)
      })
  })
  return entries
}
