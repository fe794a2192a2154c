import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

class Credit {
  constructor(readonly amount: number) {}
}

const cyclic = () => {
  const inner: Record<string, unknown> = {}
  const outer = { a: inner }
  inner.self = outer
  return outer
}

/** Each kind of output, and the message its step fails with. */
const outputs: Record<string, readonly [() => unknown, string]> = {
  bigint: [() => ({ total: 10n }), "a bigint at .total"],
  function: [() => ({ lines: [{ format: () => "x" }] }), "a function at .lines[0].format"],
  symbol: [() => ({ tag: Symbol("t") }), "a symbol at .tag"],
  cycle: [cyclic, "a cycle at .a.self"],
  date: [() => ({ at: new Date(0) }), "a Date at .at without an outputSchema"],
  map: [() => ({ byId: new Map([["a", 1]]) }), "a Map at .byId without an outputSchema"],
  set: [() => ({ "the ids": new Set([1]) }), "a Set at [\"the ids\"] without an outputSchema"],
  instance: [() => new Credit(5), "an instance of Credit without an outputSchema"],
  infinity: [() => ({ ratio: Infinity }), "a non-finite number (Infinity) at .ratio"]
}

const credit = workflow({
  id: "credit",
  name: "Credit",
  purpose: "Returns what JSON cannot carry",
  input: Schema.Struct({ kind: Schema.String }),
  result: Schema.Unknown
})
  .andThen({ id: "credit-lines", execute: ({ data }) => outputs[data.kind]![0]() })
  .andThen({ id: "after", execute: ({ data }) => data })

/** With an outputSchema, a Date or a class instance is stored encoded by it: the next step gets it back. */
class Refund extends Schema.Class<Refund>("Refund")({ amount: Schema.Number, at: Schema.Date }) {}
const typed = workflow({
  id: "typed",
  name: "Typed",
  purpose: "Keeps what a schema writes",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "make", outputSchema: Refund, execute: () => new Refund({ amount: 5, at: new Date(0) }) })
  .andThen({
    id: "read",
    execute: ({ data }) => ({ isRefund: data instanceof Refund, isDate: data.at instanceof Date })
  })

const tools = [
  defineTool({
    name: "returns_function",
    description: "x",
    parameters: Schema.Struct({}),
    execute: () => ({ ok: true, fn: () => 1 })
  }),
  defineTool({
    name: "returns_map",
    description: "x",
    parameters: Schema.Struct({}),
    execute: () => ({ m: new Map([["a", 1]]) })
  }),
  defineTool({
    name: "returns_date",
    description: "x",
    parameters: Schema.Struct({}),
    execute: () => ({ at: new Date(0) })
  })
]

const app = defineApp({ workflows: [credit, typed], tools })

layer(TestServerLive({ app }), { excludeTestServices: true })("outputs JSON cannot carry", (it) => {
  it.effect("a step returning a bigint, function, symbol, cycle, Date, Map, Set, class instance or Infinity fails naming the path", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const [kind, [, expected]] of Object.entries(outputs)) {
        const response = yield* fetchJson(`${url}/workflows/credit/execute`, json({ input: { kind } }))
        expect({ kind, status: response.status, error: response.body.error }).toEqual({
          kind,
          status: 500,
          error: `Failed to execute workflow: step credit-lines returned ${expected}`
        })
        const state =
          (yield* fetchJson(`${url}/workflows/credit/executions/${response.body.executionId}/state`)).body.data
        expect(state).toMatchObject({ status: "error", error: `step credit-lines returned ${expected}` })
      }
    }))

  it.effect("with an outputSchema a class instance holding a Date passes, and is shown as its encoded JSON", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(`${url}/workflows/typed/execute`, json({ input: {} }))
      expect(response.body.data).toMatchObject({ status: "completed", result: { isRefund: true, isDate: true } })
      const listed = yield* fetchJson(`${url}/workflows/executions?workflowId=typed`)
      const made = listed.body.data[0].events.find((event: { type: string }) => event.type === "step-complete")
      expect(made.output).toEqual({ amount: 5, at: "1970-01-01T00:00:00.000Z" })
    }))

  it.effect("a tool's result with a function or a Map is a 500 naming the path; a Date passes", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fn = yield* fetchJson(`${url}/tools/returns_function/execute`, json({}))
      expect(fn.status).toBe(500)
      expect(fn.body.error).toBe(
        "Tool returns_function failed: its result is not JSON (at fn: is a function (JSON drops it))"
      )
      const map = yield* fetchJson(`${url}/tools/returns_map/execute`, json({}))
      expect(map.status).toBe(500)
      expect(map.body.error).toBe(
        "Tool returns_map failed: its result is not JSON (at m: is a Map (JSON writes it as {}))"
      )
      const date = yield* fetchJson(`${url}/tools/returns_date/execute`, json({}))
      expect(date.status).toBe(200)
      expect(date.body.data.result).toEqual({ at: "1970-01-01T00:00:00.000Z" })
    }))
})
