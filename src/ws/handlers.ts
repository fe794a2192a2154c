import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse, type Socket } from "@effect/platform"
import { Effect, Option, Queue, Scope } from "effect"
import { AuthPolicy } from "../auth/AuthPolicy.js"
import { ServiceApi } from "../http/Api.js"
import { toIso } from "../http/Query.js"
import { type LogEntry, LogStore, matches } from "../observability/LogStore.js"
import { logLimit } from "../observability/handlers.js"
import { entityOf } from "../observability/Span.js"
import { TraceStore } from "../observability/TraceStore.js"

type Send = (message: unknown) => Effect.Effect<void>

const decoder = new TextDecoder()

/**
 * Upgrades, then runs the connection: `onOpen` may start feeds (scoped to the connection, so a client
 * that leaves releases its subscriptions), `onMessage` answers what the client sends.
 */
const serve = (
  request: HttpServerRequest.HttpServerRequest,
  handlers: {
    readonly onOpen: (send: Send) => Effect.Effect<void, never, Scope.Scope>
    readonly onMessage?: (text: string, send: Send) => Effect.Effect<void>
  }
) =>
  Effect.gen(function*() {
    const socket: Socket.Socket = yield* Effect.orDie(request.upgrade)
    yield* Effect.scoped(Effect.gen(function*() {
      const write = yield* socket.writer
      const send: Send = (message) => Effect.ignore(write(JSON.stringify(message)))
      const scope = yield* Effect.scope
      yield* socket.runRaw(
        (data) => handlers.onMessage?.(typeof data === "string" ? data : decoder.decode(data), send) ?? Effect.void,
        { onOpen: Scope.extend(handlers.onOpen(send), scope) }
      ).pipe(Effect.catchAll(() => Effect.void))
    }))
    return HttpServerResponse.empty()
  })

/** Forwards a live feed to the socket, keeping only what passes `keep`. */
const forward = <A>(
  subscribe: Effect.Effect<Queue.Dequeue<A>, never, Scope.Scope>,
  keep: (item: A) => boolean,
  toMessage: (item: A) => unknown,
  send: Send
) =>
  Effect.gen(function*() {
    const subscription = yield* subscribe
    yield* Queue.take(subscription).pipe(
      Effect.flatMap((item) => (keep(item) ? send(toMessage(item)) : Effect.void)),
      Effect.forever,
      Effect.forkScoped
    )
  })


export const WebSocketsHandlers = HttpApiBuilder.group(ServiceApi, "websockets", (handlers) =>
  Effect.gen(function*() {
    const policy = yield* AuthPolicy
    const logs = yield* LogStore
    const traces = yield* TraceStore
    const console = (key: string | undefined) =>
      policy.authorize({ routeClass: "console", method: "GET", path: "/ws", token: Option.none(), consoleKey: Option.fromNullable(key) })

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
            yield* policy.authorize({ routeClass: "execution", method: "GET", path: "/ws", token: Option.some(urlParams.token), consoleKey: Option.none() })
          }
          const claims = (user ?? null) as { sub?: unknown; id?: unknown } | null
          return yield* serve(request, {
            onOpen: (send) =>
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
            onMessage: (text, send) => {
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
          const filter = { ...urlParams, since: toIso(urlParams.since), until: toIso(urlParams.until) }
          return yield* serve(request, {
            onOpen: (send) =>
              Effect.gen(function*() {
                const subscription = yield* logs.subscribe
                const initial = yield* logs.query({ ...filter, limit: logLimit(urlParams.limit) })
                const seen = new Set<LogEntry>(initial)
                yield* send({ type: "initial", logs: initial })
                yield* Queue.take(subscription).pipe(
                  Effect.flatMap((entry) =>
                    !seen.has(entry) && matches(entry, filter) ? send({ type: "update", logs: [entry] }) : Effect.void),
                  Effect.forever,
                  Effect.forkScoped
                )
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
            entry.workflowId !== undefined ? { type: "workflow", id: entry.workflowId } :
            entry.agentId !== undefined ? { type: "agent", id: entry.agentId } : undefined
          return yield* serve(request, {
            onOpen: (send) =>
              Effect.gen(function*() {
                yield* forward(traces.subscribe, (event) => {
                  const entity = entityOf(event.span)
                  return entity !== undefined && wanted(entity.type, entity.id)
                }, (event) => ({ type: "OBSERVABILITY_EVENT", data: event }), send)
                yield* forward(logs.subscribe, (entry) => {
                  const entity = logEntity(entry)
                  return entity !== undefined && wanted(entity.type, entity.id)
                }, (entry) => ({ type: "OBSERVABILITY_LOG", data: entry }), send)
                yield* send({
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
