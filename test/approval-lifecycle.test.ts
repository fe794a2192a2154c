import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { approvalApp, refunds } from "./support/approvalApp.js"
import { AgentTestServerLive } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 1: an approval row is its conversation's; deleting the conversation deletes it.
const text = (url: string, body: unknown) => fetchJson(`${url}/agents/cashier/text`, json(body))

layer(AgentTestServerLive(approvalApp), { excludeTestServices: true })(
  "tool approval rows and their conversation",
  (it) => {
    it.effect("deleting the conversation deletes its pending approval (the conversation exists by it alone); the answer is then 404", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = refunds.length
        const conversationId = `c-${crypto.randomUUID()}`
        const first = yield* text(url, { input: "refund 44", options: { conversationId } })
        const [pending] = first.body.data.pendingApprovals
        const deleted = yield* fetchJson(`${url}/agents/cashier/conversations/${conversationId}`, { method: "DELETE" })
        expect(deleted.status).toBe(200)
        const answer = yield* text(url, {
          options: { approvals: [{ approvalId: pending.approvalId, approved: true }] }
        })
        expect(answer).toMatchObject({
          status: 404,
          body: { success: false, error: `Approval ${pending.approvalId} not found` }
        })
        expect(refunds.length).toBe(before)
        // Another conversation's approval is untouched.
        const other = yield* text(url, { input: "refund 45", options: { conversationId: `${conversationId}-other` } })
        yield* fetchJson(`${url}/agents/cashier/conversations/${conversationId}`, { method: "DELETE" })
        const kept = yield* text(url, {
          options: { approvals: [{ approvalId: other.body.data.pendingApprovals[0].approvalId, approved: true }] }
        })
        expect(kept.status).toBe(200)
        expect(refunds.slice(before)).toEqual([45])
      }))
  }
)
