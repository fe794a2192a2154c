import type { Rpc } from "@effect/rpc"
import { Effect, Layer, Option } from "effect"
import { AuthPolicy, bearerToken } from "../auth/AuthPolicy.js"
import { CONSOLE_KEY_HEADER } from "../auth/Authentication.js"
import { consoleRefusal } from "../auth/ConsoleGuard.js"
import type { RouteEntry } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { RpcAuthentication, type ServiceRpcs } from "./RpcContract.js"

type Tag = Rpc.Tag<typeof ServiceRpcs extends { requests: ReadonlyMap<string, infer R> } ? R : never>

const segment = (value: unknown) => encodeURIComponent(String(value))

/** The HTTP route each procedure mirrors, by operation id, and the path a call of it would have taken. */
const twins: Record<Tag, { readonly operationId: string; readonly path: (payload: any) => string }> = {
  AgentStream: { operationId: "agents.streamText", path: (p) => `/agents/${segment(p.agentId)}/stream` },
  WorkflowStream: { operationId: "workflows.streamWorkflow", path: (p) => `/workflows/${segment(p.workflowId)}/stream` },
  WorkflowAttach: {
    operationId: "workflows.attachExecution",
    path: (p) => `/workflows/${segment(p.workflowId)}/executions/${segment(p.executionId)}/stream`
  },
  LiveLogs: { operationId: "websockets.logsSocket", path: () => "/ws/logs" }
}

/**
 * Authorises each call as its HTTP twin: the twin's route class and path decide whether a token is
 * needed (public routes included) and whose records the caller sees; a console procedure also passes
 * the console guard (own Host and Origin, read from the WebSocket handshake) and the console key.
 */
export const RpcAuthenticationLive = (config: ServerConfigShape, routes: ReadonlyArray<RouteEntry>) =>
  Layer.effect(
    RpcAuthentication,
    Effect.gen(function*() {
      const policy = yield* AuthPolicy
      const refusal = consoleRefusal({ host: config.host, production: config.production })
      const byOperation = new Map(routes.map((route) => [route.operationId, route]))
      const routeOf = Object.fromEntries(Object.entries(twins).map(([tag, twin]) => {
        const route = byOperation.get(twin.operationId)
        if (route === undefined) throw new Error(`RPC ${tag} mirrors ${twin.operationId}, which the API does not have`)
        return [tag, { ...twin, method: route.method, routeClass: route.routeClass }]
      }))
      return RpcAuthentication.of(({ headers, payload, rpc }) => {
        const twin = routeOf[rpc._tag]
        if (twin.routeClass === "console") {
          const refused = refusal({ method: twin.method, headers })
          if (refused !== undefined) return Effect.fail(refused)
        }
        return policy.authorizeCaller({
          routeClass: twin.routeClass,
          method: twin.method,
          path: twin.path(payload),
          token: bearerToken(headers["authorization"]),
          consoleKey: Option.fromNullable(headers[CONSOLE_KEY_HEADER])
        })
      })
    })
  )
