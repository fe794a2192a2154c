import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { cashier, refunds } from "./support/approvalApp.js"
import { AgentTestServerLive, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 1 (settled 4): a sub-agent's approval becomes the parent call's. The parent's call
// stops with the sub-agent's request (naming it); the answer continues the sub-agent, then the parent
// with delegate_task's result. A tool that needs no approval runs at once.
const desk = defineAgent({
  id: "desk",
  name: "Desk",
  purpose: "Hands tasks to the cashier",
  instructions: "You delegate.",
  subAgents: [cashier]
})

const text = (url: string, body: unknown) => fetchJson(`${url}/agents/desk/text`, json(body))

layer(AgentTestServerLive(defineApp({ agents: [desk, cashier] })), { excludeTestServices: true })(
  "tool approval through delegate_task",
  (it) => {
    it.effect("/text: the parent stops on the sub-agent's request; approved, the tool runs once and the parent answers with its result", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const asked = yield* text(url, { input: "delegate \"refund 50\" to cashier" })
        expect(asked.status).toBe(200)
        expect(asked.body.data.finishReason).toBe("tool-calls")
        const [pending, ...others] = asked.body.data.pendingApprovals
        expect(others).toEqual([])
        expect(pending).toMatchObject({
          toolName: "refund",
          input: { amount: 50 },
          agentId: "cashier",
          approvalId: expect.any(String)
        })
        expect(refunds.length).toBe(before)

        // The sub-agent's approval is answered on the parent, never on the sub-agent itself.
        const elsewhere = yield* fetchJson(
          `${url}/agents/cashier/text`,
          json({ options: { approvals: [{ approvalId: pending.approvalId, approved: true }] } })
        )
        expect(elsewhere.status).toBe(404)

        const answered = yield* text(url, {
          options: { approvals: [{ approvalId: pending.approvalId, approved: true }] }
        })
        expect(answered.status).toBe(200)
        expect(answered.body.data.pendingApprovals).toBeUndefined()
        expect(refunds.slice(before)).toEqual([50])
        const delegated = answered.body.data.toolResults.find((one: { toolName: string }) =>
          one.toolName === "delegate_task"
        )
        expect(JSON.stringify(delegated.result)).toContain("refunded")
        expect(delegated.result).toMatchObject([{ agentId: "cashier", agentName: "Cashier" }])

        const twice = yield* text(url, { options: { approvals: [{ approvalId: pending.approvalId, approved: true }] } })
        expect(twice.status).toBe(409)
        expect(refunds.slice(before)).toEqual([50])

        // Both calls are in the history once each: the sub-agent's and the parent's, completed.
        const history = yield* fetchJson(`${url}/agents/cashier/history?limit=5`)
        expect(history.body.data.entries.filter((entry: { status: string }) => entry.status === "completed").length)
          .toBeGreaterThan(0)
      }))

    it.effect("/text: denied, the tool never runs and the sub-agent's answer (to the denial) reaches the parent", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const asked = yield* text(url, { input: "delegate \"refund 60\" to cashier" })
        const [pending] = asked.body.data.pendingApprovals
        const answered = yield* text(url, {
          options: { approvals: [{ approvalId: pending.approvalId, approved: false, reason: "too much" }] }
        })
        expect(answered.status).toBe(200)
        expect(refunds.length).toBe(before)
        const delegated = answered.body.data.toolResults.find((one: { toolName: string }) =>
          one.toolName === "delegate_task"
        )
        expect(delegated.result).toMatchObject([{ agentId: "cashier", response: expect.any(String) }])
        expect(JSON.stringify(delegated.result)).not.toContain("refunded")
      }))

    it.effect("/stream: the tool-approval-request frame names the sub-agent's tool; the answer over /stream continues both", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const first = yield* postSse(`${url}/agents/desk/stream`, { input: "delegate \"refund 70\" to cashier" })
        expect(first.status).toBe(200)
        const request = first.events.find((event) => event.data.type === "tool-approval-request")!.data
        expect(request).toMatchObject({ toolName: "refund", input: { amount: 70 }, agentId: "cashier" })
        expect(refunds.length).toBe(before)
        const answer = yield* postSse(`${url}/agents/desk/stream`, {
          options: { approvals: [{ approvalId: request.approvalId, approved: true }] }
        })
        expect(answer.status).toBe(200)
        expect(answer.events.at(-1)?.data.type).toBe("finish")
        expect(refunds.slice(before)).toEqual([70])
      }))

    it.effect("/chat: the client holds only the parent's tool calls, so a delegated approval is refused and the tool never runs", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const chat = yield* postSse(`${url}/agents/desk/chat`, {
          id: "c-desk",
          trigger: "submit-message",
          messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "delegate \"refund 80\" to cashier" }] }]
        })
        expect(chat.status).toBe(200)
        expect(chat.text).toContain("which a task delegated by another agent cannot ask for")
        expect(chat.text).not.toContain("tool-approval-request")
        expect(refunds.length).toBe(before)
      }))

    it.effect("a sub-agent's tool that needs no approval for its input runs at once, without stopping the parent", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const small = yield* text(url, { input: "delegate \"refund 4\" to cashier" })
        expect(small.body.data.pendingApprovals).toBeUndefined()
        expect(JSON.stringify(small.body.data.toolResults[0].result)).toContain("refunded")
        expect(refunds.slice(before)).toEqual([4])
      }))
  }
)
