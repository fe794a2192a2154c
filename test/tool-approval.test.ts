import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { approvalApp, refunds } from "./support/approvalApp.js"
import { AgentTestServerLive } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 1 (settled 4): a tool that needs approval never runs from a direct entry point.
layer(AgentTestServerLive(approvalApp), { excludeTestServices: true })("tool approval: direct execution", (it) => {
  it.effect("POST /tools/:name/execute is 409 when the input needs approval, and runs it when it does not", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const before = refunds.length
      const refused = yield* fetchJson(`${url}/tools/refund/execute`, json({ input: { amount: 12 } }))
      expect(refused).toMatchObject({ status: 409, body: { success: false, error: "Tool refund needs approval" } })
      expect(refunds.length).toBe(before)
      const small = yield* fetchJson(`${url}/tools/refund/execute`, json({ input: { amount: 5 } }))
      expect(small).toMatchObject({ status: 200, body: { success: true, data: { result: { refunded: 5 } } } })
      expect(refunds.slice(before)).toEqual([5])
    }))

  it.scoped("MCP tools/call of a tool that needs approval is an error result naming it; the tool does not run", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const before = refunds.length
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "test-client", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const result = yield* Effect.promise(() => client.callTool({ name: "refund", arguments: { amount: 50 } }))
      expect(result).toMatchObject({ isError: true, content: [{ type: "text", text: "Tool refund needs approval" }] })
      expect(refunds.length).toBe(before)
    }))
})
