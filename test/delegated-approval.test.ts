import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { cashier, refunds } from "./support/approvalApp.js"
import { AgentTestServerLive } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 1 (settled 4): a task delegated to a sub-agent cannot stop for approval; the tool
// refuses with a message the models see, and never runs (docs/decisions.md).
const desk = defineAgent({
  id: "desk",
  name: "Desk",
  purpose: "Hands tasks to the cashier",
  instructions: "You delegate.",
  subAgents: [cashier]
})

layer(AgentTestServerLive(defineApp({ agents: [desk, cashier] })), { excludeTestServices: true })("tool approval through delegate_task", (it) => {
  it.effect("the sub-agent's tool that needs approval refuses, the parent gets the refusal; one that needs none runs", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const before = refunds.length
      const asked = yield* fetchJson(`${url}/agents/desk/text`, json({ input: "delegate \"refund 50\" to cashier" }))
      expect(asked.status).toBe(200)
      expect(asked.body.data.pendingApprovals).toBeUndefined()
      const [result] = asked.body.data.toolResults
      expect(result).toMatchObject({ toolName: "delegate_task" })
      expect(JSON.stringify(result.result)).toContain("Tool refund needs a human's approval, which a task delegated by another agent cannot ask for")
      expect(refunds.length).toBe(before)

      const small = yield* fetchJson(`${url}/agents/desk/text`, json({ input: "delegate \"refund 4\" to cashier" }))
      expect(JSON.stringify(small.body.data.toolResults[0].result)).toContain("refunded")
      expect(refunds.slice(before)).toEqual([4])
    }))
})
