import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { AgentRegistry } from "../src/agents/AgentRegistry.js"
import { defineApp } from "../src/App.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../src/workflows/engine/WorkflowEngine.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #30 item 1 (settled 1 and 8): the services of the user's own reach a tool's, a step's and an
// agent's code from the layer given to ServicesLive; that code runs in the calling fiber, under the
// tool's or step's span, with the execution's log annotations, and is interrupted by cancel. The
// service's own registries are usable from user code too, without a layer cycle.

/** What the user code saw, for the test to read. */
const seen = {
  parents: new Map<string, string>(),
  holding: new Set<string>(),
  interrupted: new Set<string>()
}

class Tickets extends Context.Tag("app/Tickets")<Tickets, {
  readonly lookup: (id: string) => Effect.Effect<{ readonly id: string; readonly amount: number }>
  /** Waits for ever (until interrupted): a long call to the ticket system. */
  readonly hold: (executionId: string) => Effect.Effect<never>
}>() {}

const TicketsLive = Layer.succeed(Tickets, {
  lookup: (id) => Effect.succeed({ id, amount: 42 }),
  hold: (executionId) =>
    Effect.sync(() => seen.holding.add(executionId)).pipe(
      Effect.zipRight(Effect.never),
      Effect.onInterrupt(() => Effect.sync(() => seen.interrupted.add(executionId)))
    )
})

/** Notes the name of the span the user's own span sits under. */
const recordParent = (key: string) =>
  Effect.gen(function*() {
    const span = yield* Effect.currentSpan
    const parent = Option.flatMap(span.parent, (p) => (p._tag === "Span" ? Option.some(p.name) : Option.none()))
    seen.parents.set(key, Option.getOrElse(parent, () => "none"))
  }).pipe(Effect.orDie, Effect.withSpan(`app.${key}`))

const lookupTicket = defineTool({
  name: "lookup_ticket",
  description: "A ticket of the ticket system",
  parameters: Schema.Struct({ id: Schema.String }),
  execute: ({ id }) =>
    Effect.gen(function*() {
      yield* recordParent("tool")
      return yield* (yield* Tickets).lookup(id)
    })
})

const askSupport = defineTool({
  name: "ask_support",
  description: "Asks the support agent (which owns this tool)",
  parameters: Schema.Struct({ question: Schema.String }),
  execute: ({ question }) =>
    Effect.flatMap(AgentRegistry, (agents) => agents.text("support", { input: question })).pipe(
      Effect.map((result) => result.text)
    )
})

const support = defineAgent({
  id: "support",
  name: "Support",
  purpose: "Answers about tickets",
  instructions: () => Effect.map(Tickets, () => "You answer about tickets."),
  tools: [askSupport, lookupTicket]
})

/** A child whose input the parent computes with a service of the user's own. */
const amountOf = workflow({
  id: "amount-of",
  name: "Amount of",
  purpose: "Reads a ticket's amount",
  input: Schema.Struct({ id: Schema.String, amount: Schema.Number }),
  result: Schema.Number
}).andThen({ id: "read-amount", execute: ({ data }) => data.amount })

const refund = workflow({
  id: "refund",
  name: "Refund",
  purpose: "Refunds a ticket",
  input: Schema.Struct({ ticketId: Schema.String, hold: Schema.optional(Schema.Boolean) }),
  result: Schema.Struct({ id: Schema.String, amount: Schema.Number, open: Schema.Boolean, workflows: Schema.Number })
})
  .andThen({
    id: "load",
    execute: ({ data, executionId }) =>
      Effect.gen(function*() {
        yield* recordParent("step")
        yield* Effect.log("ticket loaded")
        if (data.hold === true) return yield* (yield* Tickets).hold(executionId)
        return yield* (yield* Tickets).lookup(data.ticketId)
      })
  })
  .andWhen({
    id: "check-open",
    // A condition that uses the service: when it is missing the step fails, it does not skip.
    condition: ({ data }) =>
      Effect.map(Effect.flatMap(Tickets, (tickets) => tickets.lookup(data.id)), (ticket) => ticket.amount > 0),
    step: { id: "mark-open", execute: ({ data }) => ({ ...data, open: true }) }
  })
  .andWorkflow({
    id: "amount",
    workflow: amountOf,
    input: ({ data }) => Effect.flatMap(Tickets, (tickets) => tickets.lookup(data.id))
  })
  .andThen({
    id: "count",
    execute: ({ data, steps }) =>
      Effect.map(Effect.flatMap(WorkflowEngine, (engine) => engine.list), (workflows) => ({
        id: steps.load.id,
        amount: data,
        open: steps["mark-open"] !== undefined,
        workflows: workflows.length
      }))
  })

const app = defineApp({ agents: [support], workflows: [refund, amountOf] })

const waitFor = <A>(what: string, probe: () => A | undefined, deadlineMs = 30_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    for (;;) {
      const found = probe()
      if (found !== undefined) return found
      if (Date.now() - started > deadlineMs) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("20 millis")
    }
  })

layer(TestServerLive({ app, provide: TicketsLive }), { excludeTestServices: true })(
  "services of the user's own",
  (it) => {
    it.effect("a tool's code gets Tickets from the layer, under the execute_tool span", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/tools/lookup_ticket/execute`, json({ input: { id: "T-1" } }))
        expect(response.status).toBe(200)
        expect(response.body.data.result).toEqual({ id: "T-1", amount: 42 })
        expect(seen.parents.get("tool")).toBe("execute_tool lookup_ticket")
      }))

    it.effect("a step's code, a condition and a child's input get Tickets and the WorkflowEngine, under the workflow.step span, logs annotated", () =>
      Effect.gen(function*() {
        const { logs, url } = yield* TestServer
        const response = yield* fetchJson(`${url}/workflows/refund/execute`, json({ input: { ticketId: "T-2" } }))
        expect(response.status).toBe(200)
        expect(response.body.data).toMatchObject({
          status: "completed",
          result: { id: "T-2", amount: 42, open: true, workflows: 2 }
        })
        expect(seen.parents.get("step")).toBe("workflow.step")
        const line = logs.find((entry) =>
          entry.startsWith("ticket loaded") && entry.includes(`executionId=${response.body.data.executionId}`)
        )
        expect(line).toBeDefined()
      }))

    it.effect("cancel interrupts a step's Effect that uses a service of the user's own", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const started = yield* fetchJson(
          `${url}/workflows/refund/run`,
          json({ input: { ticketId: "T-3", hold: true } })
        )
        const executionId: string = started.body.data.executionId
        yield* waitFor("the step to hold", () => (seen.holding.has(executionId) ? true : undefined))
        const cancelled = yield* fetchJson(
          `${url}/workflows/refund/executions/${executionId}/cancel`,
          json({ reason: "test" })
        )
        expect(cancelled.status).toBe(200)
        yield* waitFor("the step to be interrupted", () => (seen.interrupted.has(executionId) ? true : undefined))
      }))

    it.effect("a tool calls the agent that owns it (AgentRegistry from user code, no layer cycle)", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(
          `${url}/tools/ask_support/execute`,
          json({ input: { question: "where is my refund" } })
        )
        expect(response.status).toBe(200)
        expect(response.body.data.result).toEqual(expect.any(String))
        expect(response.body.data.result.length).toBeGreaterThan(0)
      }))

    it.effect("an agent's dynamic instructions get Tickets", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/agents/support/text`, json({ input: "hello" }))
        expect(response.status).toBe(200)
      }))
  }
)
