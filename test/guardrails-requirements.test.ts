import { describe, expect, expectTypeOf, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type AgentDefinition, defineAgent } from "../src/agents/Agent.js"
import {
  Guardrail,
  type InputGuardrail,
  maxInputLength,
  type OutputGuardrail,
  regexRedactor
} from "../src/agents/guardrails/Guardrail.js"
import { defineApp } from "../src/App.js"
import { AgentTestServerLive } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 2 and settled 10: a guardrail's `R` joins the agent's (compile time), and the app's
// layer provides it when the guardrail runs (over HTTP, with the fake provider).

class Policy extends Context.Tag("app/Policy")<Policy, { readonly banned: (text: string) => boolean }>() {}
class Audit extends Context.Tag("app/Audit")<Audit, { readonly note: (text: string) => Effect.Effect<void> }>() {}

const policyInput = Guardrail.input({
  name: "policy",
  check: ({ text }) =>
    Effect.map(Policy, (policy) => (policy.banned(text) ? Guardrail.block("Against policy") : Guardrail.pass))
})
const auditedOutput = Guardrail.output({
  name: "audited",
  check: ({ text }) =>
    Effect.as(Effect.flatMap(Audit, (audit) => audit.note(text)), Guardrail.rewrite(text.toUpperCase()))
})

describe("a guardrail's requirements", () => {
  it("join the agent's R; plain and ready-made guardrails require nothing", () => {
    expectTypeOf(policyInput).toEqualTypeOf<InputGuardrail<Policy>>()
    expectTypeOf(auditedOutput).toEqualTypeOf<OutputGuardrail<Audit>>()
    expectTypeOf(maxInputLength(10)).toEqualTypeOf<InputGuardrail<never>>()
    expectTypeOf(regexRedactor(/x/).output).toEqualTypeOf<OutputGuardrail<never>>()
    const agent = defineAgent({
      id: "a",
      name: "A",
      purpose: "p",
      instructions: "hi",
      inputGuardrails: [policyInput, maxInputLength(10)],
      outputGuardrails: [auditedOutput]
    })
    expectTypeOf(agent).toEqualTypeOf<AgentDefinition<Policy | Audit>>()
    expectTypeOf(
      defineAgent({ id: "b", name: "B", purpose: "p", instructions: "hi", inputGuardrails: [maxInputLength(1)] })
    )
      .toEqualTypeOf<AgentDefinition<never>>()
  })

  it("an output guardrail is not an input one, and a check returns a decision", () => {
    // @ts-expect-error an output guardrail listed as an input guardrail
    defineAgent({ id: "c", name: "C", purpose: "p", instructions: "hi", inputGuardrails: [regexRedactor(/x/).output] })
    // @ts-expect-error a check must return Guardrail.pass, rewrite(text) or block(message)
    Guardrail.input({ name: "d", check: () => "fine" })
  })
})

const notes: Array<string> = []
const services = Layer.mergeAll(
  Layer.succeed(Policy, { banned: (text) => text.includes("banned") }),
  Layer.succeed(Audit, { note: (text) => Effect.sync(() => void notes.push(text)) })
)

const agent = defineAgent({
  id: "policed",
  name: "Policed",
  purpose: "p",
  instructions: "hi",
  inputGuardrails: [policyInput],
  outputGuardrails: [auditedOutput]
})

layer(AgentTestServerLive(defineApp({ agents: [agent] }), undefined, services), { excludeTestServices: true })(
  "with the app's services",
  (it) => {
    it.effect("a guardrail's Effect runs with the services the app's layer provides", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const blocked = yield* fetchJson(`${url}/agents/policed/text`, json({ input: "a banned word" }))
        expect(blocked.status).toBe(422)
        expect(blocked.body.error).toBe("Against policy")
        const ok = yield* fetchJson(`${url}/agents/policed/text`, json({ input: "hello" }))
        expect(ok.body.data.text).toBe("YOU SAID: HELLO")
        expect(notes).toContain("You said: hello")
      }))
  }
)
