import type { LanguageModelV4 } from "@ai-sdk/provider"
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { describe, expect, it, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Layer, Option, Redacted, Stream } from "effect"
import { SignJWT } from "jose"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { defineAgent } from "../src/agents/Agent.js"
import type { HistoryEntry } from "../src/agents/AgentsSchemas.js"
import { MemoryStore, MemoryStoreLive } from "../src/agents/memory/MemoryStore.js"
import { builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import * as Errors from "../src/core/errors.js"
import { DatabaseLive } from "../src/Database.js"
import { assistant } from "../src/examples/agents.js"
import { exampleApp } from "../src/examples/app.js"
import { triage } from "../src/examples/workflows.js"
import { RPC_PATH, ServiceRpcs } from "../src/rpc/RpcContract.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #42, item 3: an agent's history and memory were bounded only by the 10 MiB body (twelve 8 MB
 * /text calls made a 192 MB history page). A call's input is capped at every door, a history page cuts
 * input and output over 8 KiB in SQL (the whole entry has a route of its own), and a context load is
 * bounded by bytes as well as by count.
 */

const MiB = 1024 * 1024
const CUT = 8 * 1024

const entry = (id: string, startTime: string, userId: string | null, input: unknown, output: string): HistoryEntry => ({
  id,
  conversationId: null,
  userId,
  input,
  output,
  status: "completed",
  startTime,
  endTime: startTime,
  usage: null,
  toolCalls: []
})

/** Twelve 8 MB entries stored as a call before the cap stored them, then read back through the store. */
const exerciseStore = (url: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const big = "é".repeat(4 * MiB) // 8 MiB as UTF-8: the cut counts bytes, not characters
    for (let i = 0; i < 12; i++) {
      yield* store.record(
        "agent-a",
        entry(`e${i}`, `2026-01-01T00:00:${String(i).padStart(2, "0")}.000Z`, "ada", big, big)
      )
    }
    yield* store.record(
      "agent-a",
      entry("small", "2026-01-01T00:01:00.000Z", "ada", [{ role: "user", content: "hi" }], "hello")
    )

    const page = yield* store.history("agent-a", { page: 0, limit: 100 })
    const bytes = Buffer.byteLength(JSON.stringify(page.entries))
    console.log(
      `history page of 12 x 8 MiB entries: ${bytes} bytes (${url.startsWith("file:") ? "SQLite" : "Postgres"})`
    )
    expect(page.total).toBe(13)
    expect(bytes).toBeLessThan(13 * 2 * CUT + 13 * 1024)
    const [small, ...cut] = page.entries
    expect(small).toEqual(entry("small", "2026-01-01T00:01:00.000Z", "ada", [{ role: "user", content: "hi" }], "hello"))
    expect(small).not.toHaveProperty("truncated")
    for (const one of cut) {
      expect(one.truncated).toEqual({ inputBytes: 8 * MiB + 2, outputBytes: 8 * MiB, limit: CUT })
      expect(typeof one.input).toBe("string")
      // The input is the start of its stored JSON text, the output the start of its text, each within the cut.
      expect(String(one.input).startsWith("\"éé")).toBe(true)
      expect(Buffer.byteLength(String(one.input))).toBeLessThanOrEqual(CUT)
      expect(Buffer.byteLength(String(one.input))).toBeGreaterThan(CUT - 4)
      expect(Buffer.byteLength(one.output ?? "")).toBeLessThanOrEqual(CUT)
      expect(one.output?.startsWith("éé")).toBe(true)
    }

    // The whole entry, the owner's only when an owner is given.
    const whole = yield* store.entry("agent-a", "e3")
    expect(Option.map(whole, (e) => [e.input === big, e.output === big, "truncated" in e])).toEqual(
      Option.some([true, true, false])
    )
    expect(Option.isSome(yield* store.entry("agent-a", "e3", { userId: "ada" }))).toBe(true)
    expect(Option.isNone(yield* store.entry("agent-a", "e3", { userId: "bob" }))).toBe(true)
    expect(Option.isNone(yield* store.entry("agent-b", "e3"))).toBe(true)

    // A context load: the newest messages that fit in its bytes, as well as within its count.
    const message = "m".repeat(MiB)
    for (let i = 0; i < 12; i++) {
      yield* store.append("agent-a", "conv", "ada", [{ role: "user", content: `${i}:${message}` }])
    }
    yield* store.append("agent-a", "conv", "ada", [{ role: "assistant", content: "last" }])
    const loaded = yield* store.load("agent-a", "conv", { limit: 10, maxBytes: 2 * MiB + 512 })
    const loadedBytes = loaded.reduce((sum, m) => sum + Buffer.byteLength(JSON.stringify(m)), 0)
    console.log(`context load of 10 of 12 x 1 MiB messages: ${loadedBytes} bytes`)
    expect(loaded.map((m) => String(m.content).slice(0, 3))).toEqual(["10:", "11:", "las"])
    expect(loadedBytes).toBeLessThanOrEqual(2 * MiB + 512)
    // The newest alone over the bound: nothing older is taken past it.
    expect(yield* store.load("agent-a", "conv", { limit: 10, maxBytes: 10 })).toEqual([])
    expect((yield* store.load("agent-a", "conv", { limit: 2, maxBytes: 100 * MiB })).length).toBe(2)
  }).pipe(Effect.provide(MemoryStoreLive.pipe(Layer.provide(DatabaseLive(url)))))

describe("the history page and the context load are bounded by bytes", () => {
  it.scoped(
    "on SQLite",
    () => Effect.flatMap(tempDir, (dir) => exerciseStore(`file:${join(dir, "memory.db")}`)),
    120_000
  )
  it.scoped.skipIf(!postgresAvailable)(
    "on Postgres",
    () => Effect.flatMap(freshPostgresDatabase, exerciseStore),
    120_000
  )
})

const SECRET = "a-long-shared-secret-for-agent-bounds-tests"
const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET))
const tokens = {
  alice: await sign({ sub: "alice" }),
  bob: await sign({ sub: "bob" }),
  admin: await sign({ sub: "root", roles: ["admin"] })
}
type Who = keyof typeof tokens

const prompts: Array<number> = []
const echo = builtinEchoModel({ wordDelayMs: 0 })
const notes = defineAgent({
  id: "notes",
  name: "Notes",
  purpose: "Remembers conversations",
  instructions: "Be brief.",
  model: {
    ...echo,
    doGenerate: (options) => (prompts.push(Buffer.byteLength(JSON.stringify(options.prompt))), echo.doGenerate(options))
  } satisfies LanguageModelV4,
  memory: true
})

const as = (who: Who, body?: unknown): RequestInit => ({
  method: body === undefined ? "GET" : "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${tokens[who]}` },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

// The cap raised so that twelve 8 MB calls are taken, as every call was before it.
const bigCalls = TestServerLive({
  app: defineApp({ agents: [notes] }),
  config: {
    agentLimits: { maxInputBytes: 9 * MiB, contextMaxBytes: 2 * MiB },
    auth: {
      production: false,
      jwt: {
        secret: Redacted.make(SECRET),
        defaultPrivate: false,
        publicRoutes: [],
        admin: { claim: "roles", value: "admin" }
      }
    }
  }
})

layer(bigCalls, { excludeTestServices: true })("twelve 8 MB calls", (it) => {
  it.effect(
    "the history page cuts them and flags them; the entry route answers one whole, to its owner or an admin",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const input = "x".repeat(8 * 1000 * 1000)
        for (let i = 0; i < 12; i++) {
          expect((yield* fetchJson(`${url}/agents/notes/text`, as("alice", { input }))).status).toBe(200)
        }
        const started = Date.now()
        const response = yield* Effect.promise(() => fetch(`${url}/agents/notes/history?limit=100`, as("alice")))
        const text = yield* Effect.promise(() => response.text())
        console.log(
          `GET /agents/notes/history?limit=100 after twelve 8 MB calls: ${Buffer.byteLength(text)} bytes, ${
            Date.now() - started
          } ms`
        )
        expect(response.status).toBe(200)
        expect(Buffer.byteLength(text)).toBeLessThan(12 * 2 * CUT + 12 * 1024)
        const page = JSON.parse(text).data
        expect(page.entries).toHaveLength(12)
        const first = page.entries[0]
        expect(first.truncated).toEqual({ inputBytes: 8_000_002, outputBytes: expect.any(Number), limit: CUT })

        const path = `${url}/agents/notes/history/${first.id}`
        const whole = yield* fetchJson(path, as("alice"))
        expect(whole.status).toBe(200)
        expect(whole.body.data.input).toBe(input)
        expect(whole.body.data).not.toHaveProperty("truncated")
        expect((yield* fetchJson(path, as("admin"))).status).toBe(200)
        // Its spans keep neither the token nor the entry's content.
        const traceId = randomBytes(16).toString("hex")
        const traced = yield* fetchJson(path, {
          headers: { ...as("alice").headers, traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` }
        })
        expect(traced.status).toBe(200)
        const spans = yield* Effect.promise(async () => {
          for (
            const deadline = Date.now() + 15_000;
            Date.now() < deadline;
            await new Promise((r) => setTimeout(r, 100))
          ) {
            const stored = await (await fetch(`${url}/observability/traces/${traceId}`)).json()
            if (
              stored.success && stored.data.spans.some((span: { name: string }) => span.name === "MemoryStore.entry")
            ) return JSON.stringify(stored.data)
          }
          return "no trace"
        })
        expect(spans).toContain("AgentRegistry.historyEntry")
        expect(spans).not.toContain(tokens.alice)
        expect(spans).not.toContain("xxxxxxxxxxxxxxxx")
        expect(yield* fetchJson(path, as("bob"))).toMatchObject({
          status: 404,
          body: { success: false, error: `History entry ${first.id} not found` }
        })
        expect((yield* fetchJson(`${url}/agents/nobody/history/${first.id}`, as("alice"))).status).toBe(404)
      }),
    180_000
  )

  it.effect("a context load holds at most AGENT_CONTEXT_MAX_BYTES of the conversation", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const said = (input: string) => as("alice", { input, options: { conversationId: "long" } })
      for (let i = 0; i < 12; i++) {
        expect((yield* fetchJson(`${url}/agents/notes/text`, said(`${i} ${"y".repeat(MiB)}`))).status).toBe(200)
      }
      const loads: Array<number> = []
      for (let i = 0; i < 4; i++) {
        expect((yield* fetchJson(`${url}/agents/notes/text`, said(`load ${i}`))).status).toBe(200)
        loads.push(prompts.at(-1)!)
      }
      console.log(`prompt bytes of four context loads (contextLimit 10, 12 x 1 MiB exchanges): ${loads.join(", ")}`)
      for (const bytes of loads) expect(bytes).toBeLessThan(2 * MiB + 4096)
    }), 180_000)
})

// A small cap, so each door's refusal is quick to reach.
const CAP = 4096
const over = "z".repeat(CAP + 100)
const refusal =
  "Agent input is 4.1 KiB as JSON, over the 4 KiB an agent call may take (AGENT_INPUT_MAX_BYTES, agents.maxInputBytes)"

const doors = TestServerLive({
  app: defineApp({ agents: [assistant], workflows: [triage] }),
  config: { agentLimits: { maxInputBytes: CAP, contextMaxBytes: 2 * MiB } }
})

layer(doors, { excludeTestServices: true })(
  "AGENT_INPUT_MAX_BYTES at every door",
  (it) => {
    it.effect("HTTP: /text, /stream, /chat (both bodies), /object and /stream-object answer 400 naming the setting", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const schema = { type: "object", properties: { a: { type: "string" } } }
        const bodies: Record<string, unknown> = {
          text: { input: over },
          stream: { input: [{ role: "user", content: over }] },
          chat: { input: over },
          object: { input: over, schema },
          "stream-object": { input: over, schema }
        }
        for (const [route, body] of Object.entries(bodies)) {
          const answer = yield* fetchJson(`${url}/agents/assistant/${route}`, json(body))
          expect(answer.status, route).toBe(400)
          expect(answer.body.error, route).toContain("AGENT_INPUT_MAX_BYTES")
        }
        // The AI SDK's own chat body: its messages are the input.
        const sdk = yield* fetchJson(
          `${url}/agents/assistant/chat`,
          json({
            id: "c1",
            trigger: "submit-message",
            messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: over }] }]
          })
        )
        expect(sdk.status).toBe(400)
        expect(sdk.body.error).toContain("AGENT_INPUT_MAX_BYTES")
        expect(yield* fetchJson(`${url}/agents/assistant/text`, json({ input: over }))).toEqual(
          expect.objectContaining({ status: 400, body: { success: false, error: refusal } })
        )
        // Within the cap, as before.
        expect((yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "z".repeat(CAP - 100) }))).status).toBe(
          200
        )
      }))

    it.scoped("/rpc (WebSocket): AgentStream fails with the ValidationError naming the setting", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const protocol = yield* Layer.build(
          RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
            Layer.provide(NodeSocket.layerWebSocket(`${url.replace(/^http/, "ws")}${RPC_PATH}`)),
            Layer.provide(RpcSerialization.layerJson)
          )
        )
        const client = yield* Effect.provide(RpcClient.make(ServiceRpcs), protocol)
        const error = yield* Effect.flip(Stream.runDrain(client.AgentStream({ agentId: "assistant", input: over })))
        expect(error).toBeInstanceOf(Errors.ValidationError)
        expect(error.message).toBe(refusal)
      }))

    it.scoped("MCP: the agent_<id> tool answers an error naming the setting", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const client = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "bounds-test", version: "1.0.0" })
            await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
            return client
          }),
          (client) => Effect.promise(() => client.close())
        )
        const answer = yield* Effect.promise(() =>
          client.callTool({ name: "agent_assistant", arguments: { input: over } })
        )
        expect(answer.isError).toBe(true)
        expect((answer.content as Array<{ text: string }>)[0]?.text).toBe(refusal)
      }))

    it.effect("andAgent: the step's prompt over the cap fails the execution, naming the setting", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const answer = yield* fetchJson(`${url}/workflows/triage/execute`, json({ input: { message: over } }))
        // The request's own input was within its cap: the workflow's step failed (500 with the execution, as any step's failure).
        expect(answer).toMatchObject({
          status: 500,
          body: {
            success: false,
            error: `Failed to execute workflow: step sort: ${refusal}`,
            errorDetail: { _tag: "ValidationError", message: refusal }
          }
        })
      }))
  }
)

describe("the settings", () => {
  it("default to 1 MiB and 2 MiB; the config file's agents section sets them, the environment wins", () => {
    expect(resolveServerConfig({}, {}).agentLimits).toEqual({ maxInputBytes: MiB, contextMaxBytes: 2 * MiB })
    expect(resolveServerConfig({ agents: { maxInputBytes: 2048, contextMaxBytes: 4096 } }, {}).agentLimits)
      .toEqual({ maxInputBytes: 2048, contextMaxBytes: 4096 })
    expect(
      resolveServerConfig({ agents: { maxInputBytes: 2048 } }, {
        AGENT_INPUT_MAX_BYTES: "1000",
        AGENT_CONTEXT_MAX_BYTES: "3000"
      }).agentLimits
    )
      .toEqual({ maxInputBytes: 1000, contextMaxBytes: 3000 })
    expect(() => resolveServerConfig({}, { AGENT_INPUT_MAX_BYTES: "1.5" })).toThrow(
      "AGENT_INPUT_MAX_BYTES: must be a positive integer (bytes), got \"1.5\""
    )
    expect(() => resolveServerConfig({}, { AGENT_CONTEXT_MAX_BYTES: "0" })).toThrow("AGENT_CONTEXT_MAX_BYTES")
  })
})

layer(TestServerLive({ app: exampleApp }), { excludeTestServices: true })("the default cap", (it) => {
  it.effect("is 1 MiB of input JSON: a 1.1 MiB input is a 400 (the body limit is 10 MiB)", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const answer = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "w".repeat(1.1 * MiB) }))
      expect(answer).toMatchObject({
        status: 400,
        body: {
          success: false,
          error:
            "Agent input is 1.1 MiB as JSON, over the 1 MiB an agent call may take (AGENT_INPUT_MAX_BYTES, agents.maxInputBytes)"
        }
      })
    }))
})
