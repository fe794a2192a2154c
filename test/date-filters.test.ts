import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { parseInstant } from "../src/http/Query.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const iso = (text: string) => {
  const parsed = parseInstant(text)
  return parsed instanceof Date ? parsed.toISOString() : parsed
}

describe("date filter parsing", () => {
  it("reads ISO 8601 dates and times as instants (no offset: UTC) and refuses the rest", () => {
    expect(iso("2024-02-29")).toBe("2024-02-29T00:00:00.000Z")
    expect(iso("2024-01-01T10:00:00+01:00")).toBe("2024-01-01T09:00:00.000Z")
    expect(iso("2024-01-01T10:00")).toBe("2024-01-01T10:00:00.000Z")
    expect(iso("0000-02-29")).toBe("0000-02-29T00:00:00.000Z")
    expect(iso("99999-01-01")).toBe("must be between 0000-01-01 and 9999-12-31")
    expect(iso("+099999-01-01T00:00:00Z")).toBe("must be between 0000-01-01 and 9999-12-31")
    expect(iso("9999-12-31T23:00:00-05:00")).toBe("must be between 0000-01-01 and 9999-12-31")
    expect(iso("2023-02-29")).toBe("must be a real date and time of day")
    expect(iso("2024-01-01T24:00:00Z")).toBe("must be a real date and time of day")
    expect(iso("1")).toBe("must be an ISO 8601 timestamp")
    expect(iso("Tue, 01 Jan 2024")).toBe("must be an ISO 8601 timestamp")
  })
})

layer(TestServerLive(), { excludeTestServices: true })("date filters over HTTP", (it) => {
  it.effect("executions from/to: out-of-range years are 400, never a filter that matches everything", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))
      expect(run.status).toBe(200)
      const list = (query: string) => fetchJson(`${url}/workflows/executions?${query}`)
      for (const query of ["from=99999-01-01", "to=%2B099999-01-01T00:00:00Z", "from=2024-02-30"]) {
        const response = yield* list(query)
        expect(response.status, query).toBe(400)
        expect(response.body.error, query).toMatch(/^Input validation failed: (from|to): must be/)
      }
      expect((yield* list("from=9999-12-31")).body.data).toEqual([])
      expect((yield* list("to=0001-01-01")).body.data).toEqual([])
      const created = (yield* list("workflowId=pipeline")).body.data[0].createdAt as string
      // The same instant written with an offset bounds the list exactly (from/to are exclusive).
      const shifted = (ms: number) => {
        const local = new Date(Date.parse(created) + ms + 2 * 3600_000).toISOString().replace("Z", "+02:00")
        return encodeURIComponent(local)
      }
      expect((yield* list(`workflowId=pipeline&from=${shifted(-1)}`)).body.data).toHaveLength(1)
      expect((yield* list(`workflowId=pipeline&from=${shifted(0)}`)).body.data).toHaveLength(0)
      expect((yield* list(`workflowId=pipeline&to=${shifted(1)}`)).body.data).toHaveLength(1)
    }))

  it.effect("log since/until are instants too, on /observability/logs and /api/logs", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const path of ["/observability/logs", "/api/logs"]) {
        expect((yield* fetchJson(`${url}${path}?since=99999-01-01`)).status, path).toBe(400)
        expect((yield* fetchJson(`${url}${path}?until=%2B099999-01-01T00:00:00Z`)).status, path).toBe(400)
        expect((yield* fetchJson(`${url}${path}?since=9999-12-31`)).body.data, path).toEqual([])
        expect((yield* fetchJson(`${url}${path}?since=2000-01-01T00:00:00%2B14:00`)).body.data.length, path)
          .toBeGreaterThan(0)
      }
    }))
})
