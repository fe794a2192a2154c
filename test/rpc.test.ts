import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { describe, expect, it, layer } from "@effect/vitest"
import { Chunk, Effect, Layer, Option, Redacted, Schedule, Stream } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import WebSocket from "ws"
import * as Errors from "../src/core/errors.js"
import { RPC_PATH, ServiceRpcs, type WorkflowUpdate } from "../src/rpc/RpcContract.js"
import { AgentTestServerLive, FakeProvider } from "./support/fakeProvider.js"
import { freePort, killed, spawnMain, waitForHttp } from "./support/process.js"
import { collectMessages } from "./support/sockets.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * The RPC group at /rpc, called by `RpcClient` from an Effect program over a real WebSocket to the real
 * server (the agent's model is the fake OpenAI-compatible server over HTTP).
 */

const rpcClientAt = (url: string) =>
  Effect.gen(function*() {
    // Built in the test's scope: the socket stays open for as long as the client is used.
    const protocol = yield* Layer.build(
      RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
        Layer.provide(NodeSocket.layerWebSocket(`${url.replace(/^http/, "ws")}${RPC_PATH}`)),
        Layer.provide(RpcSerialization.layerJson)
      )
    )
    return yield* Effect.provide(RpcClient.make(ServiceRpcs), protocol)
  })

const rpcClient = Effect.flatMap(TestServer, ({ url }) => rpcClientAt(url))

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe("RPC at /rpc, open configuration", () => {
  layer(AgentTestServerLive(), { excludeTestServices: true })((it) => {
    it.scoped("AgentStream: the agent's typed events, text deltas then finish, from the fake model", () =>
      Effect.gen(function*() {
        const client = yield* rpcClient
        const events = yield* collect(client.AgentStream({ agentId: "assistant", input: "stream this please" }))
        const deltas = events.flatMap((event) => event.type === "text-delta" ? [event.delta] : [])
        expect(deltas.length).toBeGreaterThan(2)
        expect(deltas.join("")).toBe("You said: stream this please")
        expect(events.at(-1)).toMatchObject({ type: "finish", finishReason: "stop", usage: { completionTokens: 5 } })

        const missing = yield* Effect.flip(collect(client.AgentStream({ agentId: "nobody", input: "hi" })))
        expect(missing).toBeInstanceOf(Errors.NotFound)
      }))

    it.scoped("AgentStream: a client that stops reading aborts the model call", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const client = yield* rpcClient
        const firstWords = yield* collect(
          Stream.take(client.AgentStream({ agentId: "assistant", input: "answer slowly please" }), 2)
        )
        expect(firstWords.map((event) => event.type)).toEqual(["text-delta", "text-delta"])
        // The fake counts a request whose client left before the last word (it answers a word every 200 ms).
        yield* Effect.sync(() => fake.closedEarly()).pipe(
          Effect.repeat({ until: (closed) => closed === 1, schedule: Schedule.spaced("20 millis") }),
          Effect.timeout("30 seconds")
        )
      }))

    it.scoped("WorkflowStream starts and follows an execution; WorkflowAttach replays only what follows a number", () =>
      Effect.gen(function*() {
        const client = yield* rpcClient
        const updates = yield* collect(client.WorkflowStream({ workflowId: "approval", input: { amount: 500 } }))
        const types = updates.map((update) => update.event.type)
        expect(types[0]).toBe("workflow-start")
        expect(types).toContain("workflow-suspended")
        const result = updates.at(-1)!.event
        expect(result).toMatchObject({
          type: "workflow-result",
          status: "suspended",
          suspension: { reason: "manager approval required" }
        })
        expect(updates.map((update) => update.seq)).toEqual(updates.map((_, i) => updates[0].seq + i))

        const executionId = result.executionId
        const after = updates[1].seq
        const attached = yield* collect(client.WorkflowAttach({ workflowId: "approval", executionId, after }))
        expect(attached.map((update) => update.seq)).toEqual(updates.slice(2).map((update) => update.seq))
        expect(attached.map((update) => update.event)).toEqual(updates.slice(2).map((update) => update.event))

        const missing = yield* Effect.flip(
          collect(client.WorkflowAttach({ workflowId: "approval", executionId: "no-such-execution" }))
        )
        expect(missing).toBeInstanceOf(Errors.NotFound)
        const invalid = yield* Effect.flip(
          collect(client.WorkflowStream({ workflowId: "approval", input: { amount: "lots" } }))
        )
        expect(invalid).toBeInstanceOf(Errors.ValidationError)
        // A callback is checked as over HTTP (no callbacks by default): refused before anything is stored.
        const hooked = yield* Effect.flip(collect(client.WorkflowStream({
          workflowId: "approval",
          input: { amount: 1 },
          options: { executionId: "rpc-hooked", webhook: { url: "https://hooks.example.com/done" } }
        })))
        expect(hooked).toBeInstanceOf(Errors.BadRequest)
        expect(hooked.message).toContain("webhooks.allowedHosts")
        const stored = yield* Effect.flip(
          collect(client.WorkflowAttach({ workflowId: "approval", executionId: "rpc-hooked" }))
        )
        expect(stored).toBeInstanceOf(Errors.NotFound)
      }))

    it.scoped("LiveLogs: an initial batch, then the lines logged while subscribed", () =>
      Effect.gen(function*() {
        const client = yield* rpcClient
        const pull = yield* Stream.toPull(client.LiveLogs({ workflowId: "approval" }))
        const first = yield* pull
        expect(Chunk.unsafeHead(first).type).toBe("initial")
        // Subscribed: a workflow started now logs "workflow started" under its workflow id.
        const started = yield* collect(client.WorkflowStream({ workflowId: "approval", input: { amount: 1 } }))
        const executionId = started.at(-1)!.event.executionId
        const line = yield* pull.pipe(
          Effect.map(Chunk.findFirst((message) =>
            message.type === "update" && message.logs.some((entry) => entry.executionId === executionId)
          )),
          Effect.repeat({ until: Option.isSome }),
          Effect.timeout("60 seconds")
        )
        const entry = Option.getOrThrow(line).logs.find((entry) =>
          entry.executionId === executionId
        )!
        expect(entry).toMatchObject({ message: "workflow started", workflowId: "approval", level: "info" })
      }))

    it.effect("a client that does not acknowledge gets one chunk of a stream at a time: the server waits, not buffers", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* Effect.promise(async () => {
          const socket = new WebSocket(`${url.replace(/^http/, "ws")}/rpc`)
          const received = collectMessages(socket, 60_000)
          await new Promise((open) => socket.once("open", open))
          const request = (id: string, tag: string, payload: unknown) =>
            socket.send(JSON.stringify({ _tag: "Request", id, tag, payload, headers: [] }))
          const chunksOf = (id: string) => received.messages.filter((m) => m._tag === "Chunk" && m.requestId === id)
          // Another request on the same socket, answered after everything sent before it was taken.
          const roundTrip = async (id: string) => {
            request(id, "WorkflowAttach", { workflowId: "approval", executionId: "none" })
            await received.next((m) => m._tag === "Exit" && m.requestId === id)
          }
          try {
            request("1", "LiveLogs", { workflowId: "approval" })
            await received.next((m) => m._tag === "Chunk" && m.requestId === "1")
            for (let i = 0; i < 3; i++) {
              const done = await fetch(`${url}/workflows/approval/execute`, json({ input: { amount: 1 } }))
              expect(done.status).toBe(200)
            }
            await roundTrip("2")
            expect(chunksOf("1").map((chunk) => chunk.values[0].type)).toEqual(["initial"])

            socket.send(JSON.stringify({ _tag: "Ack", requestId: "1" }))
            await received.next((m) => m._tag === "Chunk" && m.requestId === "1" && m.values[0].type === "update")
            await roundTrip("3")
            // The second chunk is the only one sent until it too is acknowledged (6 lines were logged).
            expect(chunksOf("1")).toHaveLength(2)
          } finally {
            socket.close()
          }
        })
      }))

    it.effect("LiveLogs is a console procedure: a foreign Origin on the handshake is Forbidden, even restated in a message", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const answers = yield* Effect.promise(async () => {
          const socket = new WebSocket(`${url.replace(/^http/, "ws")}/rpc`, {
            headers: { origin: "http://evil.example" }
          })
          const received = collectMessages(socket, 60_000)
          await new Promise((open) => socket.once("open", open))
          const exitOf = (id: string, headers: ReadonlyArray<[string, string]>) => {
            socket.send(JSON.stringify({ _tag: "Request", id, tag: "LiveLogs", payload: {}, headers }))
            // A chunk (the initial batch) would mean the feed was granted.
            return received.next((m) => (m._tag === "Exit" || m._tag === "Chunk") && m.requestId === id)
          }
          try {
            return [await exitOf("1", []), await exitOf("2", [["origin", url], ["host", new URL(url).host]])]
          } finally {
            socket.close()
          }
        })
        for (const answer of answers) {
          expect(answer).toMatchObject({
            _tag: "Exit",
            exit: { cause: { _tag: "Fail", error: { _tag: "Forbidden" } } }
          })
        }
      }))

    it.effect("a plain GET /rpc is a 426 envelope, and a message over the body limit closes the socket with 1009", () =>
      Effect.gen(function*() {
        const { config, url } = yield* TestServer
        const plain = yield* fetchJson(`${url}/rpc`)
        expect(plain.status).toBe(426)
        expect(plain.body).toMatchObject({ success: false, error: expect.stringContaining("WebSocket") })

        const closed = yield* Effect.promise(() =>
          new Promise<number>((resolve, reject) => {
            const socket = new WebSocket(`${url.replace(/^http/, "ws")}/rpc`)
            socket.on("open", () =>
              socket.send(JSON.stringify({
                _tag: "Request",
                id: "1",
                tag: "WorkflowAttach",
                payload: { workflowId: "approval", executionId: "x".repeat(config.bodyLimit + 1) },
                headers: []
              })))
            // An answer (NotFound) would mean the message was taken.
            socket.on("message", () => resolve(-1))
            socket.on("close", (code) => resolve(code))
            socket.on("error", reject)
          })
        )
        expect(closed).toBe(1009)
      }))
  })
})

const SECRET = "a-long-shared-secret-for-the-rpc-tests"
const sign = (sub: string) =>
  new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET))
const tokens = { alice: await sign("alice"), bob: await sign("bob") }

describe("RPC at /rpc under JWT", () => {
  const auth = { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [] } }
  layer(TestServerLive({ config: { auth } }), { excludeTestServices: true })((it) => {
    it.scoped("no or an invalid token is Unauthorized; another user's execution is not found to re-attach", () =>
      Effect.gen(function*() {
        const client = yield* rpcClient
        const start = client.WorkflowStream({ workflowId: "approval", input: { amount: 500 } })
        const anonymous = yield* Effect.flip(collect(start))
        expect(anonymous).toBeInstanceOf(Errors.Unauthorized)
        const forged = yield* Effect.flip(collect(start).pipe(RpcClient.withHeaders(bearer(`${tokens.alice}x`))))
        expect(forged).toBeInstanceOf(Errors.Unauthorized)
        expect(forged.message).toMatch(/^Invalid token/)

        const alices: ReadonlyArray<WorkflowUpdate> = yield* collect(start).pipe(
          RpcClient.withHeaders(bearer(tokens.alice))
        )
        const executionId = alices.at(-1)!.event.executionId
        const attach = collect(client.WorkflowAttach({ workflowId: "approval", executionId }))
        expect((yield* attach.pipe(RpcClient.withHeaders(bearer(tokens.alice)))).length).toBe(alices.length)
        expect(yield* Effect.flip(attach.pipe(RpcClient.withHeaders(bearer(tokens.bob))))).toBeInstanceOf(
          Errors.NotFound
        )
        // Anonymous (allowed on this management route without defaultPrivate) sees only anonymous executions.
        expect(yield* Effect.flip(attach)).toBeInstanceOf(Errors.NotFound)
      }))
  })
})

describe("RPC at /rpc in production", () => {
  const consoleKey = "a-console-key-for-the-rpc-tests"
  const config = { production: true, auth: { production: true, consoleKey: Redacted.make(consoleKey) } }
  layer(TestServerLive({ config }), { excludeTestServices: true })((it) => {
    it.scoped("LiveLogs needs the console key, as /ws/logs does", () =>
      Effect.gen(function*() {
        const client = yield* rpcClient
        const firstOf = (stream: typeof logs) => collect(Stream.take(stream, 1))
        const logs = client.LiveLogs({})
        expect(yield* Effect.flip(firstOf(logs))).toBeInstanceOf(Errors.Unauthorized)
        const wrong = yield* Effect.flip(
          firstOf(logs).pipe(RpcClient.withHeaders({ "x-console-access-key": "not-it" }))
        )
        expect(wrong).toMatchObject({ _tag: "Unauthorized", message: "Invalid console access key" })
        const [initial] = yield* firstOf(logs).pipe(RpcClient.withHeaders({ "x-console-access-key": consoleKey }))
        expect(initial.type).toBe("initial")
      }))
  })
})

describe("RPC at /rpc on the built server", () => {
  it.scopedLive("dist/main.js streams an agent's answer over /rpc, and stops promptly with a stream open", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const port = yield* Effect.promise(() => freePort())
      const server = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawnMain(["--port", String(port)], { env: { DATABASE_URL: `file:${join(dir, "rpc.db")}` } })
        ),
        (spawned) => Effect.sync(() => killed(spawned))
      )
      yield* Effect.promise(() => waitForHttp(port))
      const client = yield* rpcClientAt(`http://127.0.0.1:${port}`)
      const events = yield* collect(client.AgentStream({ agentId: "assistant", input: "hello there" }))
      const text = events.flatMap((event) => event.type === "text-delta" ? [event.delta] : []).join("")
      expect(text).toContain("hello there")
      expect(events.at(-1)?.type).toBe("finish")

      // An open feed does not hold up shutdown.
      const pull = yield* Stream.toPull(client.LiveLogs({}))
      expect(Chunk.unsafeHead(yield* pull).type).toBe("initial")
      server.child.kill("SIGTERM")
      const exit = yield* Effect.promise(() => server.exit).pipe(Effect.timeout("20 seconds"))
      expect(exit.code).toBe(0)
    }))
})
