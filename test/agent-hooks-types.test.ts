import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, type Layer } from "effect"
import { readFileSync } from "node:fs"
import { type AgentDefinition, type AgentEndEvent, defineAgent } from "../src/agents/Agent.js"
import type { Usage } from "../src/agents/AgentsSchemas.js"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { ServicesLive } from "../src/Service.js"
import { billed } from "./fixtures/readme/agent-hooks.js"

// Issue #32 item 3 (settled 10): what an agent's hooks require joins its `R`, then the app's, then the
// layer's. Compile-time promises; the runtime side is test/agent-hooks.test.ts.

class Audit extends Context.Tag("app/Audit")<Audit, { readonly note: (text: string) => Effect.Effect<void> }>() {}
class Billing
  extends Context.Tag("app/Billing")<Billing, { readonly charge: (tokens: number) => Effect.Effect<void> }>()
{}

describe("agent hooks carry their requirements", () => {
  it("each hook's Effect R joins the agent's; values and Promises require nothing", () => {
    const audited = defineAgent({
      id: "a",
      name: "A",
      purpose: "p",
      instructions: "hi",
      onStart: (event) => Effect.flatMap(Audit, (audit) => audit.note(event.agentId)),
      onEnd: (event) => Effect.flatMap(Billing, (billing) => billing.charge(event.usage?.totalTokens ?? 0))
    })
    expectTypeOf(audited).toEqualTypeOf<AgentDefinition<Audit | Billing>>()

    const tools = defineAgent({
      id: "t",
      name: "T",
      purpose: "p",
      instructions: "hi",
      onToolStart: (event) => Effect.flatMap(Audit, (audit) => audit.note(event.toolName)),
      onToolEnd: () => Promise.resolve(1),
      onError: (event) => console.log(event.error)
    })
    expectTypeOf(tools).toEqualTypeOf<AgentDefinition<Audit>>()

    const plain: Array<string> = []
    const plainHooks = defineAgent({
      id: "p",
      name: "P",
      purpose: "p",
      instructions: "hi",
      // A hook may return anything (here a number): it is ignored.
      onStart: (event) => plain.push(event.callId),
      onEnd: async () => undefined
    })
    expectTypeOf(plainHooks).toEqualTypeOf<AgentDefinition<never>>()
  })

  it("events are typed", () => {
    defineAgent({
      id: "e",
      name: "E",
      purpose: "p",
      instructions: "hi",
      onEnd: (event) => {
        expectTypeOf(event).toEqualTypeOf<AgentEndEvent>()
        expectTypeOf(event.status).toEqualTypeOf<"completed" | "error" | "cancelled" | "blocked">()
        expectTypeOf(event.usage).toEqualTypeOf<Usage | undefined>()
        // @ts-expect-error an end event has no tool name
        event.toolName
      },
      onToolEnd: (event) => {
        expectTypeOf(event.toolName).toEqualTypeOf<string>()
        expectTypeOf(event.error).toEqualTypeOf<string | undefined>()
      },
      onError: (event) => {
        expectTypeOf(event.error).toEqualTypeOf<string>()
      },
      // @ts-expect-error a hook is a function of its event
      onStart: "not a function"
    })
  })

  it("a sub-agent's hooks' R joins its parent's, and the app's layer requires it", () => {
    const sub = defineAgent({
      id: "s",
      name: "S",
      purpose: "p",
      instructions: "hi",
      onError: () => Effect.asVoid(Audit)
    })
    const parent = defineAgent({ id: "p", name: "P", purpose: "p", instructions: "hi", subAgents: [sub] })
    expectTypeOf(parent).toEqualTypeOf<AgentDefinition<Audit>>()
    const _layer = ServicesLive(defineApp({ agents: [parent] }), resolveServerConfig({}, {}))
    expectTypeOf<Layer.Layer.Context<typeof _layer>>().toEqualTypeOf<Audit>()
  })
})

describe("README: agent hooks", () => {
  it("the sample is test/fixtures/readme/agent-hooks.ts below its marker, and requires its service", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
    const sample = /<!-- readme: agent-hooks -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    const fixture = readFileSync(new URL("./fixtures/readme/agent-hooks.ts", import.meta.url), "utf8")
    expect(sample).toBeDefined()
    expect(fixture.slice(fixture.indexOf("// README:\n") + "// README:\n".length)).toBe(sample)
    // It requires Billing (the class is the sample's own): not nothing.
    expectTypeOf(billed).not.toEqualTypeOf<AgentDefinition<never>>()
  })
})
