import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServiceApi } from "../Api.js"
import { NotFound } from "../core/errors.js"
import { logLimit, LOGS_MAX } from "../http/Limits.js"
import type { StorageKind } from "../storage/Sql.js"
import { LogStore } from "./LogStore.js"
import { MetricsExposition } from "./metrics/MetricsLive.js"
import { TraceStore } from "./TraceStore.js"

const TRACES_DEFAULT = 50
const TRACES_MAX = 500

export const ObservabilityHandlers = (storage: StorageKind) =>
  HttpApiBuilder.group(ServiceApi, "observability", (handlers) =>
    Effect.gen(function*() {
      const traces = yield* TraceStore
      const logs = yield* LogStore
      const metrics = yield* MetricsExposition
      const logList = (filter: { traceId?: string; spanId?: string }) =>
        Effect.map(logs.query({ ...filter, limit: LOGS_MAX }), (entries) => ({ logs: entries, count: entries.length }))
      return handlers
        .handle("observabilityStatus", () =>
          Effect.gen(function*() {
            yield* traces.flush
            const counts = yield* traces.counts
            return {
              enabled: true,
              storage,
              ...counts,
              logCount: yield* logs.count,
              droppedLogs: yield* logs.dropped,
              liveSubscribers: { logs: yield* logs.subscribers, spans: yield* traces.subscribers }
            }
          }))
        .handle("listTraces", ({ urlParams }) =>
          Effect.zipRight(
            traces.flush,
            traces.traces({
              entityType: urlParams.entityType,
              entityId: urlParams.entityId,
              limit: Math.min(urlParams.limit ?? TRACES_DEFAULT, TRACES_MAX),
              offset: urlParams.offset ?? 0
            })
          ))
        .handle("getTrace", ({ path }) =>
          Effect.gen(function*() {
            yield* traces.flush
            const spans = yield* traces.trace(path.traceId)
            if (spans.length === 0) return yield* NotFound.of("Trace", path.traceId)
            return { traceId: path.traceId, spans }
          }))
        .handle("getSpan", ({ path }) =>
          Effect.zipRight(traces.flush, traces.span(path.spanId)).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.fail(NotFound.of("Span", path.spanId)),
              onSome: Effect.succeed
            }))
          ))
        .handle("traceLogs", ({ path }) => logList({ traceId: path.traceId }))
        .handle("spanLogs", ({ path }) => logList({ spanId: path.spanId }))
        .handle("observabilityLogs", ({ urlParams }) => logs.query({ ...urlParams, limit: logLimit(urlParams.limit) }))
        .handle("systemLogs", ({ urlParams }) => logs.query({ ...urlParams, limit: logLimit(urlParams.limit) }))
        .handle("metrics", () => metrics.prometheus)
    }))
