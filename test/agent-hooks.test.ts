import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Chunk, Context, Data, Effect, Layer, Schema, Stream } from "effect"
import { type AgentHookEvent, defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { add } from "../src/examples/tools.js"
import { RPC_PATH, ServiceRpcs } from "../src/rpc/RpcContract.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { AgentTestServerLive, FakeProvider, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #32 item 3 (settled 10): onStart, onEnd, onToolStart, onToolEnd and onError on an agent, on
// every entry that runs it. onStart/onToolStart/onToolEnd are awaited, onError/onEnd run detached
// after the history entry is committed; a failing hook is logged and never fails the call.

interface Heard {
  readonly hook: string
  readonly event: any
  /** For onEnd: whether GET /agents/:id/history already showed the call's entry when the hook ran. */
  readonly inHistory?: boolean
}

/** A service of the user's own the hooks use (provided through the app's layer). */
class Audit extends Context.Tag("app/Audit")<Audit, { readonly hear: (heard: Heard) => Effect.Effect<void> }>() {}

const heard: Array<Heard> = []
let baseUrl = ""
let fakeUrl = ""

const AuditLive = Layer.succeed(Audit, { hear: (entry) => Effect.sync(() => void heard.push(entry)) })

const hear = (hook: string) => (event: unknown) => Effect.flatMap(Audit, (audit) => audit.hear({ hook, event }))

/** onEnd reads the history over HTTP: the call's entry must be there already. */
const inHistory = (event: AgentHookEvent) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/agents/${event.agentId}/history?limit=100`)
    const body = await response.json() as { data: { entries: Array<{ id: string }> } }
    return body.data.entries.some((entry) => entry.id === event.callId)
  })

/** The fake calls get_weather for "weather in X": this one fails, so onToolEnd sees an error. */
const stormyWeather = defineTool({
  name: "get_weather",
  description: "Current weather for a location",
  parameters: Schema.Struct({ location: Schema.String }),
  execute: ({ location }) => Effect.fail(new Error(`no forecast for ${location}`))
})

const hooked = defineAgent({
  id: "hooked",
  name: "Hooked",
  purpose: "Tells its audit of every call",
  instructions: "You help.",
  tools: [add, stormyWeather],
  onStart: hear("onStart"),
  onToolStart: hear("onToolStart"),
  onToolEnd: hear("onToolEnd"),
  onError: hear("onError"),
  onEnd: (event) =>
    Effect.flatMap(
      inHistory(event),
      (found) => Effect.flatMap(Audit, (audit) => audit.hear({ hook: "onEnd", event, inHistory: found }))
    )
})

const boss = defineAgent({
  id: "boss",
  name: "Boss",
  purpose: "Delegates",
  instructions: "Delegate.",
  subAgents: [hooked]
})

class HookBoom extends Data.TaggedError("HookBoom")<{ readonly message: string }> {}

const flawed = defineAgent({
  id: "flawed",
  name: "Flawed",
  purpose: "Its hooks throw, fail and reject",
  instructions: "You help.",
  tools: [add],
  onStart: () => {
    throw new Error("onStart threw")
  },
  onToolStart: () => Effect.fail(new HookBoom({ message: "the audit is down" })),
  onToolEnd: () => Promise.reject(new Error("onToolEnd rejected")),
  onEnd: () => Effect.die("onEnd died")
})

/** Its model answers 404 (the fake's wrong path): every call fails. */
const broken = defineAgent({
  id: "broken",
  name: "Broken",
  purpose: "Fails",
  instructions: "You help.",
  model: () => createOpenAICompatible({ name: "fake", baseURL: `${fakeUrl}/wrong` }).chatModel("m"),
  onError: hear("onError"),
  onEnd: hear("onEnd")
})

const hungEnds = new Set<string>()

/** Its onEnd never finishes: it is stopped after 5 s. */
const hanging = defineAgent({
  id: "hanging",
  name: "Hanging",
  purpose: "Its onEnd hangs",
  instructions: "You help.",
  onEnd: (event) => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => hungEnds.add(event.callId))))
})

const asking = workflow({
  id: "asking",
  name: "Asking",
  purpose: "Asks hooked",
  input: Schema.Struct({}),
  result: Schema.String
})
  .andAgent({ id: "ask", agent: hooked, prompt: () => "hello from a workflow" })

const app = defineApp({ agents: [hooked, boss, flawed, broken, hanging], workflows: [asking] })

const poll = <A>(what: string, read: () => A | undefined, deadlineMs = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + deadlineMs
    while (true) {
      const found = read()
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${deadlineMs / 1000} s`)
      yield* Effect.sleep("50 millis")
    }
  })

/** What the hooks heard of `agentId`'s calls since `mark`, once one of them heard onEnd. */
const endedSince = (mark: number, agentId = "hooked") =>
  Effect.gen(function*() {
    const mine = () => heard.slice(mark).filter((h) => h.event.agentId === agentId)
    yield* poll(`onEnd of ${agentId}`, () => mine().find((h) => h.hook === "onEnd"))
    return mine()
  })

/**
 * Waits for a later call's onEnd: a hook a call before it would run (a second time, or at all) has had
 * its turn by then (instead of a fixed sleep).
 */
const settle = (url: string) =>
  Effect.gen(function*() {
    const mark = heard.length
    yield* fetchJson(`${url}/agents/hooked/text`, json({ input: "settle" }))
    yield* endedSince(mark)
  })

const setUp = Effect.gen(function*() {
  const { url } = yield* TestServer
  baseUrl = url
  fakeUrl = (yield* FakeProvider).url
  return url
})

layer(AgentTestServerLive(app, undefined, AuditLive), { excludeTestServices: true })("agent hooks", (it) => {
  it.effect("a call with a tool: onStart, onToolStart, onToolEnd, onEnd in order; onEnd after the history entry, with usage", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      const response = yield* fetchJson(
        `${url}/agents/hooked/text`,
        json({ input: "add 2 and 3", options: { conversationId: "c-order", userId: "u1" } })
      )
      expect(response.status).toBe(200)
      const got = yield* endedSince(mark)
      expect(got.map((h) => h.hook)).toEqual(["onStart", "onToolStart", "onToolEnd", "onEnd"])
      const [start, toolStart, toolEnd, end] = got
      const callId = start.event.callId
      expect(start.event).toMatchObject({
        agentId: "hooked",
        conversationId: "c-order",
        call: { userId: "u1", context: {} }
      })
      expect(toolStart.event).toMatchObject({
        callId,
        toolName: "add",
        input: { a: 2, b: 3 },
        toolCallId: expect.any(String)
      })
      expect(toolEnd.event).toMatchObject({
        callId,
        toolName: "add",
        toolCallId: toolStart.event.toolCallId,
        output: { sum: 5 }
      })
      expect(toolEnd.event.error).toBeUndefined()
      expect(end.event).toMatchObject({ callId, status: "completed", output: response.body.data.text })
      expect(end.event.usage).toEqual(response.body.data.usage)
      expect(end.event.usage.totalTokens).toBeGreaterThan(0)
      expect(end.inHistory).toBe(true)
      // Each hook ran once.
      yield* settle(url)
      expect(heard.slice(mark).filter((h) => h.event.callId === callId)).toHaveLength(4)
    }))

  it.effect("each hook runs in its own child span of the call's span", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      yield* fetchJson(
        `${url}/agents/hooked/text`,
        json({ input: "weather in Oslo", options: { conversationId: "c-span" } })
      )
      const [start, , toolEnd] = yield* endedSince(mark)
      const callId = start.event.callId
      // A failed tool run: onToolEnd has its error, no output.
      expect(toolEnd.event).toMatchObject({
        toolName: "get_weather",
        input: { location: "Oslo" },
        error: "Tool get_weather failed: no forecast for Oslo"
      })
      expect("output" in toolEnd.event).toBe(false)
      const found = yield* Effect.gen(function*() {
        const deadline = Date.now() + 20_000
        while (Date.now() < deadline) {
          const traces =
            (yield* fetchJson(`${url}/observability/traces?entityType=agent&entityId=hooked&limit=50`)).body.data.traces
          for (const summary of traces) {
            const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
            const spans = trace.spans as Array<any>
            const hooks = spans.filter((span) =>
              span.name.startsWith("agent.hook ") && span.attributes["agent.call.id"] === callId
            )
            if (hooks.length === 4) return { hooks, spans }
          }
          yield* Effect.sleep("100 millis")
        }
        throw new Error("no trace with the four hook spans")
      })
      const call = found.spans.find((span) => span.name === "AgentRegistry.text")
      expect(call).toBeDefined()
      expect(found.hooks.map((span) => span.name).sort()).toEqual([
        "agent.hook onEnd",
        "agent.hook onStart",
        "agent.hook onToolEnd",
        "agent.hook onToolStart"
      ])
      for (const span of found.hooks) {
        expect(span.parentSpanId).toBe(call.spanId)
        expect(span.attributes).toMatchObject({ "entity.type": "agent", "entity.id": "hooked", "hook.outcome": "ok" })
      }
    }))

  it.effect("a /stream client that leaves mid-answer gets onEnd with cancelled", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      const controller = new AbortController()
      const first = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/agents/hooked/stream`, {
          ...json({ input: "talk slowly please" }),
          signal: controller.signal
        })
        const { value } = await response.body!.getReader().read()
        controller.abort()
        return new TextDecoder().decode(value)
      })
      expect(first).toContain("text-delta")
      const got = yield* endedSince(mark)
      expect(got.map((h) => h.hook)).toEqual(["onStart", "onEnd"])
      expect(got[1].event).toMatchObject({ status: "cancelled", output: undefined })
      expect(got[1].inHistory).toBe(true)
    }))

  it.effect("a /chat client that leaves mid-answer gets onEnd with cancelled too", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      const controller = new AbortController()
      const first = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/agents/hooked/chat`, {
          ...json({ input: [{ id: "u1", role: "user", parts: [{ type: "text", text: "talk slowly please" }] }] }),
          signal: controller.signal
        })
        const reader = response.body!.getReader()
        let text = ""
        while (!text.includes("text-delta")) text += new TextDecoder().decode((await reader.read()).value)
        controller.abort()
        return text
      })
      expect(first).toContain("text-delta")
      const got = yield* endedSince(mark)
      expect(got.map((h) => h.hook)).toEqual(["onStart", "onEnd"])
      expect(got[1].event.status).toBe("cancelled")
    }))

  it.effect("a failed call: onError then onEnd with error, after the history entry", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      const response = yield* fetchJson(`${url}/agents/broken/text`, json({ input: "hi" }))
      expect(response.status).toBe(500)
      const got = yield* endedSince(mark, "broken")
      expect(got.map((h) => h.hook)).toEqual(["onError", "onEnd"])
      expect(got[0].event.error).toMatch(/^Agent broken failed: .*not found/i)
      expect(got[1].event).toMatchObject({ status: "error", usage: undefined })
    }))

  it.effect("hooks that throw, fail or reject are logged; the call is 200 and completed", () =>
    Effect.gen(function*() {
      const { logs } = yield* TestServer
      const url = yield* setUp
      const response = yield* fetchJson(
        `${url}/agents/flawed/text`,
        json({ input: "add 2 and 3", options: { conversationId: "c-flawed" } })
      )
      expect(response.status).toBe(200)
      expect(response.body.data.toolResults).toEqual([expect.objectContaining({ toolName: "add", result: { sum: 5 } })])
      const logged = (hook: string, what: string) => () =>
        logs.find((line) => line.includes(`agent hook ${hook} failed (${what}`) && line.includes("agentId=flawed"))
      expect(yield* poll("onStart's throw", logged("onStart", "Error: onStart threw"))).toContain(
        "the call is not affected"
      )
      yield* poll("onToolStart's failure", logged("onToolStart", "HookBoom: the audit is down"))
      yield* poll("onToolEnd's rejection", logged("onToolEnd", "Error: onToolEnd rejected"))
      yield* poll("onEnd's defect", logged("onEnd", "Error: onEnd died"))
      const history = yield* fetchJson(`${url}/agents/flawed/history?conversationId=c-flawed`)
      expect(history.body.data.entries[0].status).toBe("completed")
    }))

  it.effect(
    "an onEnd that hangs does not hold the call, and is stopped after 5 s and logged",
    () =>
      Effect.gen(function*() {
        const { logs } = yield* TestServer
        const url = yield* setUp
        const before = Date.now()
        const response = yield* fetchJson(`${url}/agents/hanging/text`, json({ input: "hi" }))
        expect(response.status).toBe(200)
        expect(Date.now() - before).toBeLessThan(4000)
        yield* poll("the hung onEnd interrupted", () => (hungEnds.size === 1 ? true : undefined))
        expect(Date.now() - before).toBeGreaterThanOrEqual(4900)
        yield* poll("the hung onEnd logged", () =>
          logs.find((line) =>
            line.includes("agent hook onEnd failed (HookTimedOut: did not finish within 5s)") &&
            line.includes("agentId=hanging")
          ))
      }),
    30_000
  )

  it.effect("every entry runs the hooks: /stream, /object, /stream-object, /chat", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const entries: Array<readonly [string, unknown]> = [
        ["stream", { input: "weather in Rome" }],
        ["object", {
          input: "a thing",
          schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
        }],
        ["stream-object", {
          input: "a thing",
          schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
        }],
        ["chat", { input: [{ id: "m1", role: "user", parts: [{ type: "text", text: "add 2 and 3" }] }] }]
      ]
      for (const [route, body] of entries) {
        const mark = heard.length
        const response = yield* postSse(`${url}/agents/hooked/${route}`, body)
        expect(response.status, route).toBe(200)
        const got = yield* endedSince(mark)
        const names = got.map((h) => h.hook)
        expect(names[0], route).toBe("onStart")
        expect(names.at(-1), route).toBe("onEnd")
        expect(got.at(-1)!.event.status, route).toBe("completed")
        if (route === "stream" || route === "chat") {
          expect(names, route).toEqual(["onStart", "onToolStart", "onToolEnd", "onEnd"])
        }
      }
    }))

  it.effect("every entry runs the hooks: a workflow's andAgent, delegate_task's sub-agent", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      let mark = heard.length
      const run = yield* fetchJson(`${url}/workflows/asking/execute`, json({ input: {} }))
      expect(run.body.data.status).toBe("completed")
      expect((yield* endedSince(mark)).map((h) => h.hook)).toEqual(["onStart", "onEnd"])

      mark = heard.length
      const delegated = yield* fetchJson(
        `${url}/agents/boss/text`,
        json({ input: "delegate \"add 2 and 3\" to hooked" })
      )
      expect(delegated.status).toBe(200)
      expect((yield* endedSince(mark)).map((h) => h.hook)).toEqual(["onStart", "onToolStart", "onToolEnd", "onEnd"])
    }))

  it.scoped("every entry runs the hooks: MCP agent_<id>, RPC AgentStream", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      let mark = heard.length
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "test-client", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const answer = yield* Effect.promise(() =>
        client.callTool({ name: "agent_hooked", arguments: { input: "hello over MCP" } })
      )
      expect(answer.isError).toBeFalsy()
      expect((yield* endedSince(mark)).map((h) => h.hook)).toEqual(["onStart", "onEnd"])

      mark = heard.length
      const protocol = yield* Layer.build(
        RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
          Layer.provide(NodeSocket.layerWebSocket(`${url.replace(/^http/, "ws")}${RPC_PATH}`)),
          Layer.provide(RpcSerialization.layerJson)
        )
      )
      const rpc = yield* Effect.provide(RpcClient.make(ServiceRpcs), protocol)
      const events = Chunk.toReadonlyArray(
        yield* Stream.runCollect(rpc.AgentStream({ agentId: "hooked", input: "add 2 and 3" }))
      )
      expect(events.at(-1)).toMatchObject({ type: "finish" })
      expect((yield* endedSince(mark)).map((h) => h.hook)).toEqual(["onStart", "onToolStart", "onToolEnd", "onEnd"])
    }))

  it.effect("an agent without hooks runs none", () =>
    Effect.gen(function*() {
      const url = yield* setUp
      const mark = heard.length
      const response = yield* fetchJson(`${url}/agents/boss/text`, json({ input: "hi" }))
      expect(response.status).toBe(200)
      yield* settle(url)
      expect(heard.slice(mark).filter((h) => h.event.agentId === "boss")).toEqual([])
    }))
})
