import { expect, layer } from "@effect/vitest"
import { Context, Effect } from "effect"
import { TraceStore } from "../src/observability/TraceStore.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

const REQUESTS = 300
const CONCURRENCY = 50

// Span rows are written in batches of fixed-size statements (observability/batchInsert.ts): no request
// may be lost or written twice, whatever the sizes of the batches the load produces.
layer(TestServerLive(), { excludeTestServices: true })("trace store under load", (it) => {
  it.effect("every one of many concurrent requests is stored as one server span, once", () =>
    Effect.gen(function*() {
      const { services, url } = yield* TestServer
      const store = Context.get(services, TraceStore)
      const ids = Array.from({ length: REQUESTS }, (_, index) => `load-${index}-${Math.random().toString(36).slice(2)}`)
      yield* Effect.forEach(ids, (id) =>
        Effect.promise(async () => {
          const response = await fetch(`${url}/agents`, { headers: { "x-request-id": id } })
          await response.arrayBuffer()
          expect(response.status).toBe(200)
        }), { concurrency: CONCURRENCY, discard: true })

      // Poll with a generous deadline: the writer stores spans in the background.
      const stored = new Map<string, number>()
      const deadline = Date.now() + 30_000
      while (Date.now() < deadline) {
        yield* store.flush
        const { traces } = yield* store.traces({ limit: 1_000, offset: 0 })
        stored.clear()
        for (const summary of traces) {
          for (const span of yield* store.trace(summary.traceId)) {
            const id = span.attributes["http.request.header.x-request-id"]
            if (typeof id === "string" && span.kind === "server") stored.set(id, (stored.get(id) ?? 0) + 1)
          }
        }
        if (ids.every((id) => stored.has(id))) break
        yield* Effect.sleep("200 millis")
      }
      expect(ids.filter((id) => !stored.has(id))).toEqual([])
      expect(ids.filter((id) => stored.get(id) !== 1)).toEqual([])
    }), { timeout: 60_000 })
})
