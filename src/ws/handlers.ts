import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServiceApi } from "../Api.js"
import { AuthPolicy } from "../auth/AuthPolicy.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { logLimit } from "../http/Limits.js"
import { ANONYMOUS_MESSAGE_LIMIT } from "../http/WebSocketUpgrade.js"
import { followLogs } from "../observability/logFollow.js"
import { type LogEntry, LogStore } from "../observability/LogStore.js"
import { entityOf } from "../observability/Span.js"
import { TraceStore } from "../observability/TraceStore.js"
import { forward, serve } from "./connection.js"

export const WebSocketsHandlers = HttpApiBuilder.group(ServiceApi, "websockets", (handlers) =>
  Effect.gen(function*() {
    const policy = yield* AuthPolicy
    const logs = yield* LogStore
    const traces = yield* TraceStore
    const { bodyLimit } = yield* ServerConfig
    const console = (key: string | undefined) =>
      policy.authorize({
        routeClass: "console",
        method: "GET",
        path: "/ws",
        token: Option.none(),
        consoleKey: Option.fromNullable(key)
      })

    return handlers
      .handle("echoSocket", ({ request, urlParams }) =>
        Effect.gen(function*() {
          const user = yield* policy.authorize({
            routeClass: "management",
            method: "GET",
            path: "/ws",
            token: Option.fromNullable(urlParams.token),
            consoleKey: Option.none()
          })
          // A token that does not verify refuses the handshake even where anonymous sockets are allowed.
          if (urlParams.token !== undefined && user === null) {
            yield* policy.authorize({
              routeClass: "execution",
              method: "GET",
              path: "/ws",
              token: Option.some(urlParams.token),
              consoleKey: Option.none()
            })
          }
          const claims = (user ?? null) as { sub?: unknown; id?: unknown } | null
          return yield* serve(request, {
            // A socket a token let in (or where none is needed) may send what a request body may.
            maxPayload: user !== null || !policy.jwtEnabled ? bodyLimit : ANONYMOUS_MESSAGE_LIMIT,
            onOpen: ({ send }) =>
              send({
                type: "CONNECTION_TEST",
                success: true,
                data: {
                  message: "WebSocket connection established",
                  timestamp: new Date().toISOString(),
                  authenticated: user !== null,
                  userId: claims === null ? null : String(claims.sub ?? claims.id ?? "") || null
                }
              }),
            onMessage: (text, { send }) => {
              let parsed: unknown
              try {
                parsed = JSON.parse(text)
              } catch {
                return send({ type: "ERROR", success: false, error: "Invalid message format" })
              }
              return send({ type: "ECHO", success: true, data: parsed })
            }
          })
        }))
      .handle("logsSocket", ({ request, urlParams }) =>
        Effect.gen(function*() {
          yield* console(urlParams.key)
          return yield* serve(request, {
            // The console feeds read nothing from their clients.
            maxPayload: ANONYMOUS_MESSAGE_LIMIT,
            onOpen: (connection) =>
              Effect.gen(function*() {
                const { initial, isNew, live } = yield* followLogs(logs, {
                  ...urlParams,
                  limit: logLimit(urlParams.limit)
                })
                yield* connection.send({ type: "initial", logs: initial })
                yield* forward(live, isNew, (entry) => ({ type: "update", logs: [entry] }), connection)
              })
          })
        }))
      .handle("observabilitySocket", ({ request, urlParams }) =>
        Effect.gen(function*() {
          yield* console(urlParams.key)
          const wanted = (type: string | undefined, id: string | undefined) =>
            (urlParams.entityType === undefined || urlParams.entityType === type) &&
            (urlParams.entityId === undefined || urlParams.entityId === id)
          const logEntity = (entry: LogEntry) =>
            entry.workflowId !== undefined ?
              { type: "workflow", id: entry.workflowId } :
              entry.agentId !== undefined
              ? { type: "agent", id: entry.agentId }
              : undefined
          return yield* serve(request, {
            // The console feeds read nothing from their clients.
            maxPayload: ANONYMOUS_MESSAGE_LIMIT,
            onOpen: (connection) =>
              Effect.gen(function*() {
                yield* forward(
                  yield* traces.subscribe,
                  (event) => {
                    const entity = entityOf(event.span)
                    return entity !== undefined && wanted(entity.type, entity.id)
                  },
                  (event) => ({ type: "OBSERVABILITY_EVENT", data: event }),
                  connection
                )
                yield* forward(
                  yield* logs.subscribe,
                  (entry) => {
                    const entity = logEntity(entry)
                    return entity !== undefined && wanted(entity.type, entity.id)
                  },
                  (entry) => ({ type: "OBSERVABILITY_LOG", data: entry }),
                  connection
                )
                yield* connection.send({
                  type: "CONNECTION_SUCCESS",
                  success: true,
                  data: {
                    message: "Observability stream connected",
                    entityType: urlParams.entityType ?? null,
                    entityId: urlParams.entityId ?? null,
                    timestamp: new Date().toISOString()
                  }
                })
              })
          })
        }))
  }))
