import { describe, expect, it, layer } from "@effect/vitest"
import { Deferred, Effect, Either, Layer, Schema } from "effect"
import { defineApp } from "../src/App.js"
import * as Errors from "../src/core/errors.js"
import { add, getWeather } from "../src/examples/tools.js"
import { defineTool } from "../src/tools/Tool.js"
import { ToolRunner } from "../src/tools/ToolRunner.js"
import { fetchJson, json, makeClient, TestServer, TestServerLive } from "./support/TestServer.js"

const aborted = Effect.runSync(Deferred.make<string>())

const testApp = defineApp({
  tools: [
    getWeather,
    add,
    defineTool({
      name: "echo_context",
      description: "Returns what it was given",
      parameters: { type: "object", properties: { note: { type: "string", minLength: 2 } }, required: ["note"] },
      execute: (input, { context, user }) => ({ input, context, user })
    }),
    defineTool({
      name: "explode",
      description: "Always fails",
      parameters: Schema.Struct({}),
      execute: () => Effect.fail(new Error("kaboom"))
    }),
    defineTool({
      name: "throws",
      description: "Throws synchronously",
      parameters: Schema.Struct({}),
      execute: () => {
        throw new Error("thrown inside")
      }
    }),
    defineTool({
      name: "wait_for_abort",
      description: "Resolves only when aborted",
      parameters: Schema.Struct({}),
      execute: (_input, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            Deferred.unsafeDone(aborted, Effect.succeed("aborted"))
            reject(new Error("aborted"))
          })
        })
    }),
    defineTool({
      name: "bigint",
      description: "Returns a value JSON cannot carry",
      parameters: Schema.Struct({}),
      execute: () => ({ n: BigInt(1) })
    })
  ]
})

layer(TestServerLive({ app: testApp }), { excludeTestServices: true })("tools over HTTP", (it) => {
  it.effect("GET /tools lists every tool with its JSON Schema parameters and status", () =>
    Effect.gen(function*() {
      const client = yield* makeClient
      const tools = yield* client.tools.listTools()
      expect(tools.map((t) => t.name)).toEqual([
        "get_weather",
        "add",
        "echo_context",
        "explode",
        "throws",
        "wait_for_abort",
        "bigint"
      ])
      const weather = tools.find((t) => t.name === "get_weather")!
      expect(weather).toMatchObject({
        description: "Current weather for a location",
        tags: ["weather"],
        status: "ready",
        agents: [],
        parameters: { type: "object", required: ["location"], properties: { location: { type: "string" } } }
      })
    }))

  it.effect("executes get_weather and add through the typed client", () =>
    Effect.gen(function*() {
      const client = yield* makeClient
      const weather = yield* client.tools.executeTool({
        path: { name: "get_weather" },
        payload: { input: { location: "Oslo" } }
      })
      expect(weather.toolName).toBe("get_weather")
      expect(weather.result).toEqual({ location: "Oslo", temperatureC: 21, condition: "sunny" })
      expect(weather.executionTime).toBeGreaterThanOrEqual(0)
      expect(Number.isNaN(Date.parse(weather.timestamp))).toBe(false)
      const sum = yield* client.tools.executeTool({ path: { name: "add" }, payload: { input: { a: 2, b: 40 } } })
      expect(sum.result).toEqual({ sum: 42 })
    }))

  it.effect("typed client sees 404 and 400 as the declared errors", () =>
    Effect.gen(function*() {
      const client = yield* makeClient
      const missing = yield* Effect.either(client.tools.executeTool({ path: { name: "nope" }, payload: { input: {} } }))
      expect(Either.isLeft(missing) && missing.left).toEqual(new Errors.NotFound({ message: "Tool nope not found" }))
      const invalid = yield* Effect.either(
        client.tools.executeTool({ path: { name: "add" }, payload: { input: { a: "x" } } })
      )
      expect(Either.isLeft(invalid) && invalid.left).toBeInstanceOf(Errors.ValidationError)
    }))

  it.effect("wire format: unknown tool 404, invalid input 400 with the path, failure 500", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const missing = yield* fetchJson(`${url}/tools/nope/execute`, json({ input: {} }))
      expect(missing).toMatchObject({ status: 404, body: { success: false, error: "Tool nope not found" } })

      const invalid = yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: "x" } }))
      expect(invalid.status).toBe(400)
      expect(invalid.body).toEqual({
        success: false,
        error: "Input validation failed: input.a: Expected number, actual \"x\"; input.b: is missing"
      })

      const ajv = yield* fetchJson(`${url}/tools/echo_context/execute`, json({ input: { note: "x" } }))
      expect(ajv).toMatchObject({
        status: 400,
        body: { success: false, error: "Input validation failed: input.note: must NOT have fewer than 2 characters" }
      })

      const failed = yield* fetchJson(`${url}/tools/explode/execute`, json({}))
      expect(failed).toMatchObject({ status: 500, body: { success: false, error: "Tool explode failed: kaboom" } })
      const thrown = yield* fetchJson(`${url}/tools/throws/execute`, json({}))
      expect(thrown).toMatchObject({
        status: 500,
        body: { success: false, error: "Tool throws failed: thrown inside" }
      })
    }))

  it.effect("context reaches the tool; the user is null without auth", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(
        `${url}/tools/echo_context/execute`,
        json({ input: { note: "hello" }, context: { tier: "gold" } })
      )
      expect(response.status).toBe(200)
      expect(response.body.data.result).toEqual({ input: { note: "hello" }, context: { tier: "gold" }, user: null })
    }))

  it.effect("closing the request aborts the tool's signal", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const controller = new AbortController()
      const request = fetch(`${url}/tools/wait_for_abort/execute`, { ...json({}), signal: controller.signal }).catch(
        () => "client aborted"
      )
      yield* Effect.sleep("100 millis")
      controller.abort()
      expect(yield* Effect.promise(() => request)).toBe("client aborted")
      expect(yield* Deferred.await(aborted).pipe(Effect.timeout("5 seconds"))).toBe("aborted")
    }))

  it.effect("a result that is not JSON is the tool's failure", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(`${url}/tools/bigint/execute`, json({}))
      expect(response.status).toBe(500)
      expect(response.body.error).toMatch(/^Tool bigint failed: its result is not JSON \(.*BigInt/)
    }))

  it.effect("a result that does not survive JSON (a sum overflowing to Infinity) is the tool's failure", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: 1e308, b: 1e308 } }))
      expect(response.status).toBe(500)
      expect(response.body.error).toMatch(/^Tool add failed: its result is not JSON \(at sum: must be a finite number/)
    }))
})

const brokenRunner = Layer.succeed(
  ToolRunner,
  ToolRunner.of({
    list: Effect.die(new Error("secret detail of a bug")),
    get: () => Effect.die("unused"),
    execute: () => Effect.die("unused")
  })
)

layer(TestServerLive({ override: brokenRunner }), { excludeTestServices: true })("defects", (it) => {
  it.effect("a defect is 500 'Internal server error'; the details go only to the log", () =>
    Effect.gen(function*() {
      const { logs, url } = yield* TestServer
      const response = yield* fetchJson(`${url}/tools`)
      expect(response).toMatchObject({ status: 500, body: { success: false, error: "Internal server error" } })
      expect(JSON.stringify(response.body)).not.toContain("secret detail")
      expect(logs.some((line) => line.includes("secret detail of a bug"))).toBe(true)
    }))
})

describe("defineTool", () => {
  it("rejects invalid names and invalid JSON Schemas at definition time", () => {
    expect(() => defineTool({ name: "bad name", description: "", parameters: Schema.Struct({}), execute: () => 1 }))
      .toThrow(/must match/)
    expect(() => defineTool({ name: "ok", description: "", parameters: { type: "nonsense" }, execute: () => 1 }))
      .toThrow(/parameters/)
  })
})
