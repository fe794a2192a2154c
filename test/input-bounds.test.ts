import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/** A JSON text nested `depth` levels deep around `leaf`: {"a":{"a":...leaf...}}. */
const nestedObject = (depth: number, leaf = "1") => "{\"a\":".repeat(depth) + leaf + "}".repeat(depth)
const nestedArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth)

const postRaw = (url: string, body: string) =>
  fetchJson(url, { method: "POST", headers: { "content-type": "application/json" }, body })

const expectRefused = (response: { status: number; body: any }, pattern: RegExp) => {
  expect(response.status).toBe(400)
  expect(response.body.success).toBe(false)
  expect(response.body.error).toMatch(pattern)
}

/** The server still answers a plain request: a refused body did not take the process down. */
const expectAlive = (url: string) =>
  Effect.gen(function*() {
    const tools = yield* fetchJson(`${url}/tools`)
    expect(tools.status).toBe(200)
  })

layer(TestServerLive(), { excludeTestServices: true })("bounds on client input", (it) => {
  it.effect("a schema asking for more than can be generated is a 400 at once; the process lives", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const huge: ReadonlyArray<Record<string, unknown>> = [
        { type: "object", properties: { list: { type: "array", minItems: 1e9 } }, required: ["list"] },
        { type: "object", properties: { text: { type: "string", minLength: 1e9 } }, required: ["text"] },
        { type: "object", minProperties: 1e9 },
        {
          type: "object",
          properties: {
            grid: {
              type: "array",
              minItems: 1000,
              items: { type: "array", minItems: 1000, items: { type: "string", minLength: 1000 } }
            }
          },
          required: ["grid"]
        },
        {
          type: "object",
          $defs: { row: { type: "array", minItems: 100000, items: { type: "integer" } } },
          properties: { rows: { $ref: "#/$defs/row" } },
          required: ["rows"]
        },
        // Each node requires two more: no finite value fits.
        {
          type: "object",
          $defs: {
            node: {
              type: "object",
              properties: { left: { $ref: "#/$defs/node" }, right: { $ref: "#/$defs/node" } },
              required: ["left", "right"]
            }
          },
          properties: { tree: { $ref: "#/$defs/node" } },
          required: ["tree"]
        }
      ]
      const started = Date.now()
      for (const schema of huge) {
        const object = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "fill it", schema }))
        expectRefused(
          object,
          /^Input validation failed: schema: requires values of more than 100000 characters of JSON/
        )
        const streamed = yield* fetchJson(`${url}/agents/assistant/stream-object`, json({ input: "fill it", schema }))
        expectRefused(streamed, /^Input validation failed: schema: /)
        const text = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: "fill it", options: { experimental_output: { type: "object", schema } } })
        )
        expectRefused(text, /^Input validation failed: options\.experimental_output\.schema: /)
      }
      expect(Date.now() - started).toBeLessThan(20_000)
      yield* expectAlive(url)
    }))

  it.effect("a large schema within the bound is still filled and valid", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const schema = {
        type: "object",
        properties: { list: { type: "array", minItems: 500, items: { type: "string", minLength: 20 } } },
        required: ["list"],
        minProperties: 3
      }
      const object = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "fill it", schema }))
      expect(object.status).toBe(200)
      expect(object.body.data.list).toHaveLength(500)
      expect(Object.keys(object.body.data).length).toBeGreaterThanOrEqual(3)
    }))

  it.effect("a schema whose optional parts multiply is answered with a smaller valid object, not a hang", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      // Every node has 400 optional children of the same kind (within the 500 properties a client's schema
      // may have): filled generously, three levels are 6.4 * 10^7 objects.
      const schema = {
        type: "object",
        $defs: {
          node: {
            type: "object",
            properties: Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`c${i}`, { $ref: "#/$defs/node" }]))
          }
        },
        properties: { root: { $ref: "#/$defs/node" } },
        required: ["root"]
      }
      const object = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "fill it", schema }))
      expect(object.status).toBe(200)
      expect(object.body.data).toHaveProperty("root")
      expect(JSON.stringify(object.body).length).toBeLessThan(2_000_000)
    }))

  it.effect("bodies nested 5,000 deep are a 400 with the envelope, wherever the nesting is", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const deep = nestedObject(5000)
      const cases: ReadonlyArray<[string, string, RegExp]> = [
        [
          `${url}/tools/add/execute`,
          `{"input":${deep}}`,
          /^Input validation failed: input(\.a)+: .*nested deeper than 64/
        ],
        [
          `${url}/tools/add/execute`,
          `{"input":{"a":1,"b":2},"context":${deep}}`,
          /^Input validation failed: context(\.a)+: /
        ],
        [`${url}/agents/assistant/text`, `{"input":${nestedArray(5000)}}`, /^Input validation failed: input(\[0\])+: /],
        [
          `${url}/agents/assistant/text`,
          `{"input":"hi","options":{"context":${deep}}}`,
          /^Input validation failed: options\.context(\.a)+: /
        ],
        [
          `${url}/agents/assistant/text`,
          `{"input":[{"role":"user","content":[{"type":"text","text":"hi","extra":${deep}}]}]}`,
          /^Input validation failed: input\[0\]\.content\[0\]\.extra(\.a)+: /
        ],
        [`${url}/workflows/pipeline/execute`, `{"input":${deep}}`, /^Input validation failed: input(\.a)+: /],
        // MCP reads the body as text and parses it itself: the same check applies.
        [
          `${url}/mcp/default/mcp`,
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":${deep}}}`,
          /^Input validation failed: params\.arguments(\.a)+: /
        ]
      ]
      for (const [target, body, pattern] of cases) {
        const response = yield* postRaw(target, body)
        expectRefused(response, pattern)
        expect(response.body.error.length).toBeLessThan(2048)
      }
      // At the limit it is accepted (and fails, if at all, on the tool's own schema).
      const atLimit = yield* postRaw(
        `${url}/tools/add/execute`,
        `{"input":{"a":1,"b":2},"context":${nestedObject(63)}}`
      )
      expect(atLimit.status).toBe(200)
      yield* expectAlive(url)
    }))

  it.effect("a 5 MB string that fails validation is answered with a short excerpt", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const big = "x".repeat(5 * 1024 * 1024)
      const cases: ReadonlyArray<[string, unknown]> = [
        [`${url}/tools/add/execute`, { input: { a: big, b: 1 } }],
        [`${url}/tools/add/execute`, { input: { a: 1, b: 2 }, context: big }],
        [`${url}/agents/assistant/text`, { input: "hi", options: { userId: 5, temperature: big } }],
        [`${url}/workflows/pipeline/execute`, { input: { text: 1, n: big } }],
        [`${url}/agents/assistant/text`, { input: "hi", options: { providerOptions: { [big]: 1 } } }]
      ]
      for (const [target, body] of cases) {
        const response = yield* fetchJson(target, json(body))
        expectRefused(response, /^Input validation failed: /)
        expect(JSON.stringify(response.body).length).toBeLessThan(2048)
      }
      const excerpt = yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: big, b: 1 } }))
      expect(excerpt.body.error).toMatch(/"xxxx+…" \(5242880 chars\)/)
      // A message built by a service (not by validation) quotes the value as an excerpt too.
      const update = yield* fetchJson(`${url}/updates`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-service-dev": "true" },
        body: JSON.stringify({ packageName: big })
      })
      expect(update.status).toBe(400)
      expect(update.body.error).toMatch(/^Package x+… \(5242880 chars\) is not a dependency/)
      expect(JSON.stringify(update.body).length).toBeLessThan(2048)
    }))

  it.effect("numbers that overflow to Infinity are a 400, for tools and workflows", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const add = yield* postRaw(`${url}/tools/add/execute`, `{"input":{"a":1e400,"b":1}}`)
      expectRefused(add, /^Input validation failed: input\.a: must be a finite number/)
      const negative = yield* postRaw(`${url}/tools/add/execute`, `{"input":{"a":1,"b":-1e400}}`)
      expectRefused(negative, /^Input validation failed: input\.b: must be a finite number/)
      const slow = yield* postRaw(`${url}/workflows/slow/execute`, `{"input":{"ms":1e400}}`)
      expectRefused(slow, /^Input validation failed: input\.ms: must be a finite number/)
      const run = yield* postRaw(`${url}/workflows/slow/run`, `{"input":{"ms":1e999}}`)
      expectRefused(run, /^Input validation failed: input\.ms: /)
      const fine = yield* postRaw(`${url}/tools/add/execute`, `{"input":{"a":1e300,"b":1}}`)
      expect(fine.body.data.result).toEqual({ sum: 1e300 })
    }))
})

/** The NUL cases, run against a server on SQLite and one on Postgres. */
const nulCases = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(
    "a NUL character in a body string, a key, a path id or a query is a 400, never a 500",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const bodies: ReadonlyArray<[string, unknown, RegExp]> = [
          [
            `${url}/agents/assistant/text`,
            { input: "hi", options: { conversationId: "c\u0000" } },
            /options\.conversationId: must not contain NUL/
          ],
          [
            `${url}/agents/assistant/text`,
            { input: "hi", options: { userId: "\u0000" } },
            /options\.userId: must not contain NUL/
          ],
          [`${url}/agents/assistant/text`, { input: "say \u0000" }, /input: must not contain NUL/],
          [
            `${url}/tools/add/execute`,
            { input: { a: 1, b: 2 }, context: { "k\u0000": 1 } },
            /context: .*key.*must not contain NUL/
          ],
          [
            `${url}/workflows/pipeline/execute`,
            { input: { text: "\u0000", n: 1 } },
            /input\.text: must not contain NUL/
          ]
        ]
        for (const [target, body, pattern] of bodies) {
          const response = yield* fetchJson(target, json(body))
          expectRefused(response, pattern)
        }
        const paths = [
          `${url}/workflows/approval/executions/%00/state`,
          `${url}/workflows/executions?workflowId=%00`,
          `${url}/agents/assistant/history?conversationId=%00`,
          `${url}/agents/assistant/history?userId=a%00b`,
          `${url}/observability/traces?entityType=agent&entityId=%00`,
          `${url}/agents/%00`,
          `${url}/tools/%00`
        ]
        for (const target of paths) {
          const response = yield* fetchJson(target)
          expect([400, 404], target).toContain(response.status)
          expect(response.body.success).toBe(false)
        }
        const resume = yield* fetchJson(`${url}/workflows/approval/executions/%00/resume`, json({ resumeData: {} }))
        expect([400, 404]).toContain(resume.status)
        yield* expectAlive(url)
      }),
    30_000
  )
}

layer(TestServerLive(), { excludeTestServices: true })("NUL characters on SQLite", nulCases)

describe.skipIf(!postgresAvailable)("NUL characters on Postgres", () => {
  layer(
    PostgresTestServerLive(),
    { excludeTestServices: true }
  )("DATABASE_URL=postgres://...", nulCases)
})
