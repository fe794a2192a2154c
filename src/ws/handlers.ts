import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { AuthPolicy } from "../auth/AuthPolicy.js"
import { ServiceApi } from "../http/Api.js"
import { toIso } from "../http/Query.js"
import { type LogEntry, LogStore, matches } from "../observability/LogStore.js"
import { logLimit } from "../observability/handlers.js"
import { jsonSize } from "../observability/Redaction.js"
import { entityOf } from "../observability/Span.js"
import { TraceStore } from "../observability/TraceStore.js"
import { forward, serve } from "./connection.js"

/** The initial batch of /ws/logs is the newest entries that fit in this many bytes of JSON. */
export const INITIAL_BYTES = 1024 * 1024

/**
 * What tells entries apart once they have been through the store (the initial batch is read from it,
 * the live feed carries them as logged): an entry equal in all of these is shown once.
 */
export const entryKey = (entry: LogEntry) =>
  `${entry.instance}\u0000${entry.timestamp}\u0000${entry.level}\u0000${entry.spanId ?? ""}\u0000${entry.message}`

export const newestWithin = (entries: ReadonlyArray<LogEntry>, bytes: number): ReadonlyArray<LogEntry> => {
  let left = bytes
  let first = entries.length
  while (first > 0 && (left -= jsonSize(entries[first - 1]) + 1) >= 0) first--
  return entries.slice(first)
}

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
          const filter = { ...urlParams, since: toIso(urlParams.since), until: toIso(urlParams.until) }
          return yield* serve(request, {
            onOpen: (connection) =>
              Effect.gen(function*() {
                const subscription = yield* logs.subscribe
                const initial = newestWithin(yield* logs.query({ ...filter, limit: logLimit(urlParams.limit) }), INITIAL_BYTES)
                // Entries logged between the subscription and the query come both ways: each is sent once.
                const inInitial = new Set(initial.map(entryKey))
                yield* connection.send({ type: "initial", logs: initial })
                yield* forward(
                  subscription,
                  (entry) => matches(entry, filter) && !(inInitial.size > 0 && inInitial.delete(entryKey(entry))),
                  (entry) => ({ type: "update", logs: [entry] }),
                  connection
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
            onOpen: (connection) =>
              Effect.gen(function*() {
                yield* forward(yield* traces.subscribe, (event) => {
                  const entity = entityOf(event.span)
                  return entity !== undefined && wanted(entity.type, entity.id)
                }, (event) => ({ type: "OBSERVABILITY_EVENT", data: event }), connection)
                yield* forward(yield* logs.subscribe, (entry) => {
                  const entity = logEntity(entry)
                  return entity !== undefined && wanted(entity.type, entity.id)
                }, (entry) => ({ type: "OBSERVABILITY_LOG", data: entry }), connection)
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
