import { describe, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, type Layer, Schema } from "effect"
import { type AgentDefinition, defineAgent } from "../src/agents/Agent.js"
import type { AgentRegistry } from "../src/agents/AgentRegistry.js"
import { builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"
import { defineApp, type ServiceApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { ServicesLive } from "../src/Service.js"
import { defineTool, type Tool } from "../src/tools/Tool.js"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"

// Issue #30 item 1: what user code requires accumulates on its definition, then on the app, then on
// the layer (the service's own services excepted). Compile-time promises; the runtime side is
// test/user-services.test.ts.

class Tickets extends Context.Tag("app/Tickets")<Tickets, { readonly open: Effect.Effect<boolean> }>() {}
class Billing extends Context.Tag("app/Billing")<Billing, { readonly total: Effect.Effect<number> }>() {}
class Audit extends Context.Tag("app/Audit")<Audit, { readonly note: (text: string) => Effect.Effect<void> }>() {}

const ticketsTool = defineTool({
  name: "tickets",
  description: "d",
  parameters: Schema.Struct({}),
  execute: () => Effect.flatMap(Tickets, (tickets) => tickets.open)
})
const plainTool = defineTool({ name: "plain", description: "d", parameters: Schema.Struct({}), execute: () => 1 })
const promiseTool = defineTool({
  name: "promised",
  description: "d",
  parameters: Schema.Struct({}),
  execute: async () => 1
})

const child = workflow({ id: "child", name: "C", purpose: "p", input: Schema.Number, result: Schema.Number })
  .andThen({ id: "c1", execute: ({ data }) => Effect.map(Billing, () => data) })

describe("requirements flow to the layer", () => {
  it("a tool carries its execute's R; plain values and promises require nothing", () => {
    expectTypeOf(ticketsTool).toEqualTypeOf<Tool<Tickets>>()
    expectTypeOf(plainTool).toEqualTypeOf<Tool<never>>()
    expectTypeOf(promiseTool).toEqualTypeOf<Tool<never>>()
  })

  it("a tool's needsApproval function joins its R; true requires nothing (issue #32)", () => {
    const refund = defineTool({
      name: "refund",
      description: "d",
      parameters: Schema.Struct({ amount: Schema.Number }),
      execute: () => Effect.flatMap(Tickets, (tickets) => tickets.open),
      needsApproval: ({ amount }) => Effect.map(Billing, () => amount > 10)
    })
    expectTypeOf(refund).toEqualTypeOf<Tool<Tickets | Billing>>()
    const always = defineTool({
      name: "always",
      description: "d",
      parameters: Schema.Struct({}),
      execute: () => 1,
      needsApproval: true
    })
    expectTypeOf(always).toEqualTypeOf<Tool<never>>()
    const promised = defineTool({
      name: "p",
      description: "d",
      parameters: Schema.Struct({}),
      execute: () => 1,
      needsApproval: async () => true
    })
    expectTypeOf(promised).toEqualTypeOf<Tool<never>>()
    const agent = defineAgent({ id: "refunds", name: "R", purpose: "p", instructions: "hi", tools: [refund] })
    expectTypeOf(agent).toEqualTypeOf<AgentDefinition<Tickets | Billing>>()
  })

  it("an agent carries its tools', sub-agents' and dynamic parts' R", () => {
    const sub = defineAgent({ id: "sub", name: "S", purpose: "p", instructions: () => Effect.as(Audit, "be brief") })
    const agent = defineAgent({
      id: "a",
      name: "A",
      purpose: "p",
      instructions: "hi",
      tools: [ticketsTool, plainTool],
      subAgents: [sub]
    })
    expectTypeOf(agent).toEqualTypeOf<AgentDefinition<Tickets | Audit>>()
    // A model list: each dynamic element's R joins (issue #32 item 4).
    const fallback = defineAgent({
      id: "f",
      name: "F",
      purpose: "p",
      instructions: "hi",
      model: [() => Effect.as(Billing, builtinEchoModel()), () => Effect.as(Audit, builtinEchoModel())]
    })
    expectTypeOf(fallback).toEqualTypeOf<AgentDefinition<Billing | Audit>>()
    expectTypeOf(defineAgent({ id: "b", name: "B", purpose: "p", instructions: "hi" })).toEqualTypeOf<
      AgentDefinition<never>
    >()
  })

  it("a workflow carries its steps', conditions' and child inputs' R", () => {
    const flow = workflow({ id: "w", name: "W", purpose: "p", input: Schema.Number, result: Schema.Number })
      .andWhen({
        id: "when",
        condition: () => Effect.flatMap(Tickets, (tickets) => tickets.open),
        step: { id: "inner", execute: ({ data }) => data }
      })
      .andWorkflow({
        id: "sub",
        workflow: child,
        input: ({ data }) => Effect.as(Effect.flatMap(Audit, (audit) => audit.note("x")), data)
      })
    expectTypeOf(flow).toMatchTypeOf<WorkflowDefinition<number, number, Tickets | Billing | Audit>>()
    expectTypeOf(flow).not.toMatchTypeOf<WorkflowDefinition<number, number, Tickets | Billing>>()
  })

  it("an app carries every part's R; the layer requires it but the service's own services", () => {
    const app = defineApp({ tools: [ticketsTool, plainTool], workflows: [child] })
    expectTypeOf(app).toEqualTypeOf<ServiceApp<Tickets | Billing>>()
    const _layer = ServicesLive(app, resolveServerConfig({}, {}))
    expectTypeOf<Layer.Layer.Context<typeof _layer>>().toEqualTypeOf<Tickets | Billing>()
    const own = defineTool({
      name: "own",
      description: "d",
      parameters: Schema.Struct({}),
      execute: () => Effect.flatMap(Effect.context<AgentRegistry>(), () => Effect.succeed(1))
    })
    expectTypeOf(own).toEqualTypeOf<Tool<AgentRegistry>>()
    const _ownLayer = ServicesLive(defineApp({ tools: [own] }), resolveServerConfig({}, {}))
    expectTypeOf<Layer.Layer.Context<typeof _ownLayer>>().toEqualTypeOf<never>()
  })
})
