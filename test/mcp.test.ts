import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { AgentTestServerLive, FakeProvider } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

/** The SDK's own client, connected to the service's default MCP server and closed with the scope. */
const mcpClient = Effect.flatMap(TestServer, ({ url }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "test-client", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  ))

const textOf = (result: object): string => {
  const [first] = (result as { content: Array<{ type: string; text: string }> }).content
  expect(first.type).toBe("text")
  return first.text
}

const defaultServer = {
  id: "default",
  name: "Agent and Workflow Service",
  version: "1.0.0",
  description: expect.any(String),
  transport: { type: "streamable-http", endpoint: "/mcp/default/mcp" },
  toolCount: 4
}

layer(AgentTestServerLive(), { excludeTestServices: true })("MCP", (it) => {
  it.effect("GET /mcp/servers and /mcp/servers/:id describe the default server; an unknown id is 404", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/mcp/servers`)).toMatchObject({
        status: 200,
        body: { success: true, data: [defaultServer] }
      })
      expect(yield* fetchJson(`${url}/mcp/servers/default`)).toMatchObject({
        status: 200,
        body: { success: true, data: defaultServer }
      })
      expect(yield* fetchJson(`${url}/mcp/servers/nope`)).toMatchObject({
        status: 404,
        body: { success: false, error: "MCP server nope not found" }
      })
      expect(yield* fetchJson(`${url}/mcp/nope/mcp`, json({ jsonrpc: "2.0", id: 1, method: "tools/list" })))
        .toMatchObject({
          status: 404,
          body: { success: false, error: "MCP server nope not found" }
        })
    }))

  it.effect("the stateless endpoint answers GET and DELETE with 405", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const method of ["GET", "DELETE"]) {
        const response = yield* fetchJson(`${url}/mcp/default/mcp`, { method })
        expect(response.status).toBe(405)
        expect(response.headers.get("allow")).toBe("POST")
        expect(response.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } })
      }
    }))

  it.effect("a chunked JSON-RPC body is read once, under the body limit", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const body = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }))
      const response = yield* fetchJson(`${url}/mcp/default/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: new ReadableStream({ start: (controller) => (controller.enqueue(body), controller.close()) }),
        duplex: "half"
      } as RequestInit)
      expect(response.status).toBe(200)
      expect(response.body).toMatchObject({ jsonrpc: "2.0", id: 7 })
      expect(response.body.result.tools).toHaveLength(4)
    }))

  it.scoped("the SDK client lists the tools and the agents as tools, with their input schemas", () =>
    Effect.gen(function*() {
      const client = yield* mcpClient
      expect(client.getServerVersion()).toMatchObject({ name: "Agent and Workflow Service", version: "1.0.0" })
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name)).toEqual(["get_weather", "add", "whoami", "agent_assistant"])
      const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]))
      expect(byName.get_weather.inputSchema).toMatchObject({ type: "object", required: ["location"] })
      expect(byName.add).toMatchObject({
        description: "Add two numbers",
        inputSchema: {
          type: "object",
          properties: { a: { type: "number" }, b: { type: "number" } },
          required: ["a", "b"]
        }
      })
      expect(byName.whoami.inputSchema).toMatchObject({ type: "object" })
      expect(byName.agent_assistant.inputSchema).toEqual({
        type: "object",
        properties: {
          input: { type: "string" },
          conversationId: { type: "string" },
          approvals: expect.objectContaining({ type: "array" })
        },
        anyOf: [{ required: ["input"] }, { required: ["approvals"] }]
      })
    }))

  it.scoped("the SDK client calls a tool; invalid arguments and unknown tools are errors", () =>
    Effect.gen(function*() {
      const client = yield* mcpClient
      const sum = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 2, b: 3 } }))
      expect(sum.isError).toBeFalsy()
      expect(JSON.parse(textOf(sum))).toEqual({ sum: 5 })
      expect(sum.structuredContent).toEqual({ sum: 5 })

      const whoami = yield* Effect.promise(() => client.callTool({ name: "whoami", arguments: {} }))
      expect(JSON.parse(textOf(whoami))).toEqual({ user: null, context: {} })

      const invalid = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: "two" } }))
      expect(invalid.isError).toBe(true)
      expect(textOf(invalid)).toMatch(/^Input validation failed/)

      const unknown = yield* Effect.promise(() =>
        client.callTool({ name: "nope", arguments: {} }).then(() => "resolved", String)
      )
      expect(unknown).toContain("Tool nope not found")
    }))

  it.scoped("an agent is a tool: agent_<id> answers with the agent's text", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      fake.reset()
      const client = yield* mcpClient
      const answer = yield* Effect.promise(() =>
        client.callTool({ name: "agent_assistant", arguments: { input: "hello" } })
      )
      expect(answer.isError).toBeFalsy()
      expect(textOf(answer)).toBe("You said: hello")

      const missing = yield* Effect.promise(() => client.callTool({ name: "agent_assistant", arguments: {} }))
      expect(missing.isError).toBe(true)
      expect(textOf(missing)).toBe("Input validation failed: input: is missing")
    }))
})
