import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Client JSON Schemas (/object, /stream-object, experimental_output on /text and /stream, the /chat SDK
 * body's options): their patterns run in linear time (RE2) and their size is bounded before Ajv compiles
 * them (issue #27 items 1 and 5). The built-in model answers, filling a string property with the value
 * the input gives it by name.
 */

/** Runs `work` while /health is asked again and again; the longest wait for an answer, in ms. */
const whileHealthAnswers = <A, E, R>(url: string, work: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    let done = false
    let longest = 0
    const poll = Effect.promise(async () => {
      let last = Date.now()
      while (!done) {
        const response = await fetch(`${url}/health`)
        await response.text()
        const now = Date.now()
        longest = Math.max(longest, now - last)
        last = now
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })
    const poller = yield* Effect.fork(poll)
    // Let the poller's first answer come before the work starts.
    yield* Effect.sleep("100 millis")
    const result = yield* work.pipe(Effect.ensuring(Effect.sync(() => (done = true))))
    yield* poller.await
    return { result, longest }
  })

const evil = (pattern: string) => ({ type: "object", properties: { a: { type: "string", pattern } }, required: ["a"] })

/** Every door through which a client's schema reaches Ajv, with `schema` in its place. */
const doors = (schema: unknown) =>
  [
    { path: "object", body: { input: "a is \"x\"", schema }, prefix: "schema" },
    { path: "stream-object", body: { input: "a is \"x\"", schema }, prefix: "schema" },
    {
      path: "text",
      body: { input: "a is \"x\"", options: { experimental_output: { type: "object", schema } } },
      prefix: "options.experimental_output.schema"
    },
    {
      path: "stream",
      body: { input: "a is \"x\"", options: { experimental_output: { type: "object", schema } } },
      prefix: "options.experimental_output.schema"
    },
    {
      path: "chat",
      body: {
        id: "c1",
        trigger: "submit-message",
        messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "a is \"x\"" }] }],
        options: { experimental_output: { type: "object", schema } }
      },
      prefix: "options.experimental_output.schema"
    }
  ] as const

/** The requests of every door, written out beforehand (a large body's JSON text costs the test time too). */
const requestsEverywhere = (schema: unknown) => doors(schema).map((door) => ({ door, init: json(door.body) }))

const sendRefused = (url: string, requests: ReturnType<typeof requestsEverywhere>, message: RegExp) =>
  Effect.gen(function*() {
    for (const { door, init } of requests) {
      const response = yield* fetchJson(`${url}/agents/assistant/${door.path}`, init)
      expect(response.status, `${door.path}: ${JSON.stringify(response.body).slice(0, 300)}`).toBe(400)
      expect(response.body.success).toBe(false)
      expect(response.body.error.startsWith(`Input validation failed: ${door.prefix}`), response.body.error).toBe(true)
      expect(response.body.error).toMatch(message)
      expect(response.body.error.length).toBeLessThan(1_000)
    }
  })

const expectRefusedEverywhere = (url: string, schema: unknown, message: RegExp) =>
  sendRefused(url, requestsEverywhere(schema), message)

layer(TestServerLive(), { excludeTestServices: true })("client JSON Schemas", (it) => {
  it.effect("a backtracking pattern over the model's output does not stall the event loop; /health answers throughout", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      // 34 `a`s and a `!`: about 2 s of backtracking for JavaScript's RegExp (40 took 106 s).
      const input = `a is "${"a".repeat(34)}!"`
      const { result, longest } = yield* whileHealthAnswers(
        url,
        Effect.all([
          fetchJson(`${url}/agents/assistant/object`, json({ input, schema: evil("^(a+)+$") })),
          fetchJson(
            `${url}/agents/assistant/text`,
            json({
              input,
              options: { experimental_output: { type: "object", schema: evil("^(a+)+$") } }
            })
          ),
          fetchJson(
            `${url}/agents/assistant/object`,
            json({
              input,
              schema: {
                type: "object",
                patternProperties: { "^(a+)+$": { type: "string" } },
                additionalProperties: false
              }
            })
          )
        ])
      )
      expect(longest).toBeLessThan(1_000)
      // The output does not match: the call fails as any output failing its schema does.
      expect(result[0].status).toBe(500)
      expect(result[0].body.error).toMatch(/^Agent assistant failed: /)
      // The same pattern on a matching value passes.
      const matching = yield* fetchJson(
        `${url}/agents/assistant/object`,
        json({ input: `a is "${"a".repeat(34)}"`, schema: evil("^(a+)+$") })
      )
      expect(matching.status).toBe(200)
      expect(matching.body.data).toEqual({ a: "a".repeat(34) })
    }))

  it.effect("a pattern RE2 cannot run (backreference, lookaround) is a 400 naming it, at every door", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* expectRefusedEverywhere(
        url,
        evil("^(a)\\1$"),
        /properties\.a\.pattern: pattern "\^\(a\)\\1\$" is not supported/
      )
      yield* expectRefusedEverywhere(url, evil("^(?=a)a$"), /pattern "\^\(\?=a\)a\$" is not supported/)
      yield* expectRefusedEverywhere(
        url,
        { type: "object", patternProperties: { "(?<!x)y": { type: "string" } } },
        /patternProperties: pattern "\(\?<!x\)y" is not supported/
      )
      // The quoted pattern is an excerpt.
      const long = `(?=${"x".repeat(5_000)})`
      const response = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "hi", schema: evil(long) }))
      expect(response.status).toBe(400)
      expect(response.body.error).toMatch(/… \(5004 chars\)/)
    }))

  it.effect("a schema over the bounds is a 400 naming the bound, quickly, at every door", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const properties = (n: number, leaf: object = { type: "string" }) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, leaf]))
      // The two: about 250 KB and 1.7 MB of schema.
      const tenThousand = requestsEverywhere({ type: "object", properties: properties(10_000) })
      const fortyThousand = requestsEverywhere({
        type: "object",
        properties: properties(40_000, { type: "string", pattern: "^a+$" })
      })
      const started = Date.now()
      const { longest } = yield* whileHealthAnswers(
        url,
        Effect.gen(function*() {
          yield* sendRefused(url, tenThousand, /is longer than 100000 characters of JSON/)
          yield* sendRefused(url, fortyThousand, /is longer than 100000 characters of JSON/)
        })
      )
      expect(longest).toBeLessThan(1_000)
      expect(Date.now() - started).toBeLessThan(15_000)

      yield* expectRefusedEverywhere(
        url,
        { type: "object", properties: properties(600, {}) },
        /properties: has 600 properties in all; at most 500 are allowed/
      )
      const wide = {
        type: "object",
        allOf: Array.from({ length: 1_000 }, () => ({ type: "object", minProperties: 0 }))
      }
      yield* expectRefusedEverywhere(url, wide, /has more than 2000 schema nodes/)
      let deep: Record<string, unknown> = { type: "string" }
      for (let i = 0; i < 20; i++) deep = { type: "object", properties: { x: deep } }
      yield* expectRefusedEverywhere(url, deep, /is nested deeper than 32 levels/)
      const patterns = { type: "object", properties: properties(60, { type: "string", pattern: "^a$" }) }
      yield* expectRefusedEverywhere(url, patterns, /at most 50 patterns are allowed/)
      const big = { type: "object", properties: { a: { type: "string", pattern: "[ab]{999}c" } } }
      yield* expectRefusedEverywhere(url, big, /pattern "\[ab\]\{999\}c" is too large/)
      const chars = { type: "object", properties: { a: { type: "string", description: "x".repeat(200_000) } } }
      yield* expectRefusedEverywhere(url, chars, /is longer than 100000 characters of JSON/)

      // Within the bounds: 500 properties are fine.
      const most = { type: "object", properties: properties(500, { type: "string", maxLength: 8 }) }
      const fine = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "p1 is \"x\"", schema: most }))
      expect(fine.status).toBe(200)
    }))
})
