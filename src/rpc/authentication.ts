import type { Rpc } from "@effect/rpc"
import { Effect, Layer, Option } from "effect"
import { CONSOLE_KEY_HEADER } from "../auth/Authentication.js"
import { AuthPolicy, bearerToken } from "../auth/AuthPolicy.js"
import type { RouteEntry } from "../auth/RouteClass.js"
import { Forbidden } from "../core/errors.js"
import { RpcAuthentication, type ServiceRpcs } from "./RpcContract.js"

type Tag = Rpc.Tag<typeof ServiceRpcs extends { requests: ReadonlyMap<string, infer R> } ? R : never>

/** Where the route puts the console guard's verdict on the WebSocket handshake (see RpcRoute.ts). */
export const CONSOLE_VERDICT_HEADER = "x-rpc-console-verdict"

const segment = (value: unknown) => encodeURIComponent(String(value))

/** The HTTP route each procedure mirrors, by operation id, and the path a call of it would have taken. */
const twins: Record<Tag, { readonly operationId: string; readonly path: (payload: any) => string }> = {
  AgentStream: { operationId: "agents.streamText", path: (p) => `/agents/${segment(p.agentId)}/stream` },
  WorkflowStream: {
    operationId: "workflows.streamWorkflow",
    path: (p) => `/workflows/${segment(p.workflowId)}/stream`
  },
  WorkflowAttach: {
    operationId: "workflows.attachExecution",
    path: (p) => `/workflows/${segment(p.workflowId)}/executions/${segment(p.executionId)}/stream`
  },
  LiveLogs: { operationId: "websockets.logsSocket", path: () => "/ws/logs" }
}

/**
 * Authorises each call as its HTTP twin: the twin's route class and path decide whether a token is
 * needed (public routes included) and whose records the caller sees; a console procedure also needs
 * the console guard's pass on the WebSocket handshake (own Host and Origin; `nonce` is its mark) and
 * the console key.
 */
export const RpcAuthenticationLive = (routes: ReadonlyArray<RouteEntry>, nonce: string) =>
  Layer.effect(
    RpcAuthentication,
    Effect.gen(function*() {
      const policy = yield* AuthPolicy
      const byOperation = new Map(routes.map((route) => [route.operationId, route]))
      const routeOf = Object.fromEntries(
        Object.entries(twins).map(([tag, twin]) => {
          const route = byOperation.get(twin.operationId)
          if (route === undefined) {
            throw new Error(`RPC ${tag} mirrors ${twin.operationId}, which the API does not have`)
          }
          return [tag, { ...twin, method: route.method, routeClass: route.routeClass }]
        })
      )
      return RpcAuthentication.of(({ headers, payload, rpc }) => {
        const twin = routeOf[rpc._tag]
        const verdict = headers[CONSOLE_VERDICT_HEADER]
        if (twin.routeClass === "console" && verdict !== nonce) {
          const why = verdict?.startsWith(`${nonce}:`)
            ? verdict.slice(nonce.length + 1)
            : "Console procedures need the service's own origin"
          return Effect.fail(new Forbidden({ message: why }))
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
