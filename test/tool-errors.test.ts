import { HttpApiSchema } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Schema } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { defineTool, type ToolErrorClass } from "../src/tools/Tool.js"
import { AgentTestServerLive, FakeProvider } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

/** A declared error with no message: its tag and fields say it. */
class TicketNotFound extends Schema.TaggedError<TicketNotFound>()(
  "TicketNotFound",
  { ticketId: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** A declared error with a message of its own. */
class TicketClosed extends Schema.TaggedError<TicketClosed>()(
  "TicketClosed",
  { ticketId: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 409 })
) {}

/** Not declared by the tool: stays a 500. */
class LedgerDown extends Schema.TaggedError<LedgerDown>()("LedgerDown", { region: Schema.String }) {}

class LocationUnknown extends Schema.TaggedError<LocationUnknown>()(
  "LocationUnknown",
  { location: Schema.String, message: Schema.String },
  HttpApiSchema.annotations({ status: 422 })
) {}

const lookupTicket = defineTool({
  name: "lookup_ticket",
  description: "Looks a ticket up",
  parameters: Schema.Struct({ ticketId: Schema.String }),
  errors: [TicketNotFound, TicketClosed],
  execute: ({ ticketId }) =>
    ticketId === "T-9"
      ? Effect.fail(new TicketNotFound({ ticketId }))
      : ticketId === "T-closed"
      ? Effect.fail(new TicketClosed({ ticketId, message: `Ticket ${ticketId} is closed` }))
      : ticketId === "T-down"
      ? Effect.fail(new LedgerDown({ region: "eu" }))
      : Effect.succeed({ ticketId, status: "open" })
})

// The fake provider asks for get_weather when the user mentions the weather.
const weather = defineTool({
  name: "get_weather",
  description: "The weather of a known place",
  parameters: Schema.Struct({ location: Schema.String }),
  errors: [LocationUnknown],
  execute: ({ location }) => Effect.fail(new LocationUnknown({ location, message: `No station in ${location}` }))
})

const forecaster = defineAgent({
  id: "forecaster",
  name: "Forecaster",
  purpose: "Tells the weather",
  instructions: "Use get_weather.",
  tools: [weather]
})

const app = defineApp({ agents: [forecaster], tools: [lookupTicket] })

describe("declared tool errors at definition", () => {
  it("a status outside 400-499, or 401, 403, 407, or an unannotated class, is refused when the tool is defined", () => {
    class Unannotated extends Schema.TaggedError<Unannotated>()("Unannotated", {}) {}
    const withStatus = (status: number) =>
      class Odd extends Schema.TaggedError<Odd>()("Odd", {}, HttpApiSchema.annotations({ status })) {}
    const define = (error: ToolErrorClass) => () =>
      defineTool({ name: "odd", description: "odd", parameters: Schema.Struct({}), errors: [error], execute: () => 1 })
    expect(define(Unannotated)).toThrow(
      "Tool \"odd\" error Unannotated: its status is 500; annotate the class with HttpApiSchema.annotations({ status }), a status in 400-499 other than 401, 403 and 407"
    )
    for (const status of [401, 403, 407, 399, 500]) {
      expect(define(withStatus(status))).toThrow(`Tool "odd" error Odd: its status is ${status}`)
    }
    expect(define(withStatus(400))).not.toThrow()
    expect(define(withStatus(499))).not.toThrow()
  })
})

layer(AgentTestServerLive(app), { excludeTestServices: true })("declared tool errors", (it) => {
  it.effect("POST /tools/:name/execute answers a declared error's status with the envelope and errorDetail; others stay 500", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const missing = yield* fetchJson(`${url}/tools/lookup_ticket/execute`, json({ input: { ticketId: "T-9" } }))
      expect(missing.status).toBe(404)
      expect(missing.body).toEqual({
        success: false,
        error: "TicketNotFound {\"ticketId\":\"T-9\"}",
        errorDetail: {
          _tag: "TicketNotFound",
          message: "TicketNotFound {\"ticketId\":\"T-9\"}",
          fields: { ticketId: "T-9" }
        }
      })
      const closed = yield* fetchJson(`${url}/tools/lookup_ticket/execute`, json({ input: { ticketId: "T-closed" } }))
      expect(closed.status).toBe(409)
      expect(closed.body).toEqual({
        success: false,
        error: "Ticket T-closed is closed",
        errorDetail: { _tag: "TicketClosed", message: "Ticket T-closed is closed", fields: { ticketId: "T-closed" } }
      })
      const down = yield* fetchJson(`${url}/tools/lookup_ticket/execute`, json({ input: { ticketId: "T-down" } }))
      expect(down.status).toBe(500)
      expect(down.body).toEqual({ success: false, error: "Tool lookup_ticket failed: LedgerDown {\"region\":\"eu\"}" })
      const open = yield* fetchJson(`${url}/tools/lookup_ticket/execute`, json({ input: { ticketId: "T-1" } }))
      expect(open.status).toBe(200)

      // The execute_tool span names the error's tag, never its fields.
      const deadline = Date.now() + 20_000
      let span: any
      while (span === undefined) {
        const traces = (yield* fetchJson(`${url}/observability/traces?limit=100`)).body.data.traces
        for (const summary of traces) {
          const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
          span ??= trace.spans.find((candidate: any) =>
            candidate.name === "execute_tool lookup_ticket" && candidate.attributes["error.type"] === "TicketNotFound"
          )
        }
        if (span === undefined && Date.now() > deadline) throw new Error("the tool's span was not stored within 20 s")
        if (span === undefined) yield* Effect.sleep("50 millis")
      }
      expect(JSON.stringify(span)).not.toContain("T-9")
    }))

  it.effect("the model gets a declared error as the tool's result, {error: {_tag, message}}", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      fake.reset()
      const { url } = yield* TestServer
      const response = yield* fetchJson(
        `${url}/agents/forecaster/text`,
        json({ input: "what is the weather in Atlantis?" })
      )
      expect(response.status).toBe(200)
      const error = { _tag: "LocationUnknown", message: "No station in Atlantis" }
      expect(response.body.data.toolResults).toEqual([{
        toolCallId: expect.any(String),
        toolName: "get_weather",
        result: { error }
      }])
      expect(response.body.data.text).toBe(`The tool said: ${JSON.stringify({ error })}`)
    }))

  it.scoped("MCP gets a declared error as an isError result", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "test-client", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "lookup_ticket", arguments: { ticketId: "T-closed" } })
      )
      expect(result.isError).toBe(true)
      expect(result.content).toEqual([{ type: "text", text: "Ticket T-closed is closed" }])
      expect(result.structuredContent).toEqual({
        error: { _tag: "TicketClosed", message: "Ticket T-closed is closed" }
      })
    }))

  it.effect("/doc lists the declared statuses on the execute route", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const spec = (yield* fetchJson(`${url}/doc`)).body
      const responses = spec.paths["/tools/{name}/execute"].post.responses
      expect(responses["404"].description).toContain("TicketNotFound (lookup_ticket)")
      expect(JSON.stringify(responses["404"].content)).toContain("ToolErrorEnvelope")
      expect(responses["409"].description).toContain("TicketClosed (lookup_ticket)")
      expect(responses["422"].description).toContain("LocationUnknown (get_weather)")
      expect(spec.components.schemas.ToolErrorEnvelope.properties.errorDetail).toEqual({
        $ref: "#/components/schemas/ErrorDetail"
      })
    }))
})
