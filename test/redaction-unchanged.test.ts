import { describe, expect, it } from "vitest"
import { recordedAttributes, REDACTED, SPAN_CAP, unchangedSize } from "../src/observability/Redaction.js"

// unchangedSize is the shortcut for spans whose attributes are recorded as they are: it must agree with
// recordedAttributes on whether anything changes and on how much of the budget the attributes take.
const cases: ReadonlyArray<Record<string, unknown>> = [
  {},
  { "http.request.method": "GET", "url.path": "/agents", "http.response.status_code": 200, "ok": true },
  { "http.request.header.host": "localhost:3000", "http.request.header.user-agent": "curl/8" },
  { "http.request.header.Host": "localhost:3000" },
  { "http.request.header.authorization": "Bearer secret" },
  { "http.request.header.authorization": REDACTED },
  { "http.response.header.set-cookie": "a=b" },
  { "http.request.header.x-count": 3 },
  { "url.query": "limit=10&offset=0" },
  { "url.query": "token=abc" },
  { "url.full": "http://localhost/agents?api_key=abc" },
  { "url.full": "http://localhost/agents?limit=5" },
  { "note": "a=b but no query" },
  { "list": ["a", "b"] },
  { "big": "x".repeat(9000) },
  { "unicode": "é".repeat(2000), "escaped": "\"quoted\"\n" }
]

describe("unchangedSize", () => {
  it.each(cases.map((attributes) => [JSON.stringify(attributes).slice(0, 60), attributes] as const))(
    "agrees with recordedAttributes: %s",
    (_, attributes) => {
      const budget = { left: SPAN_CAP }
      const recorded = recordedAttributes(attributes, budget)
      const size = unchangedSize(attributes)
      const unchanged = recorded.dropped === 0 && JSON.stringify(recorded.attributes) === JSON.stringify(attributes)
      if (size === undefined) {
        expect(unchanged && !Object.values(attributes).some((value) => typeof value === "object")).toBe(false)
      } else {
        expect(unchanged).toBe(true)
        expect(size).toBe(SPAN_CAP - budget.left)
      }
    }
  )
})
