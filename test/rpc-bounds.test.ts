import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { request as httpRequest } from "node:http"
import type { Socket } from "node:net"
import WebSocket from "ws"
import { ANONYMOUS_MESSAGE_LIMIT } from "../src/http/WebSocketUpgrade.js"
import { MAX_CONNECTIONS_PER_CALLER, MAX_STREAMS_PER_CONNECTION } from "../src/rpc/RpcLimits.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { collectMessages } from "./support/sockets.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * The bounds of the WebSocket doors (issue #27 items 4, 7, 8, 9): what a client of /rpc or /ws that does
 * not use the typed client can make the server hold, echo or store. Every socket here is real.
 */

const wsUrl = (url: string, path = "/rpc") => `${url.replace(/^http/, "ws")}${path}`

const openSocket = (url: string, options: WebSocket.ClientOptions = {}) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(url, { maxPayload: 1 << 30, ...options })
    socket.once("open", () => resolve(socket))
    socket.once("error", reject)
    socket.once("unexpected-response", (_request, response) => reject(new Error(`refused: ${response.statusCode}`)))
  })

const request = (
  socket: WebSocket,
  id: string,
  tag: string,
  payload: unknown,
  headers: ReadonlyArray<[string, string]> = []
) => socket.send(JSON.stringify({ _tag: "Request", id, tag, payload, headers }))

const closeCodeOf = (socket: WebSocket, ms = 10_000) =>
  new Promise<number | "open">((resolve) => {
    const timer = setTimeout(() => resolve("open"), ms)
    socket.once("close", (code) => {
      clearTimeout(timer)
      resolve(code)
    })
  })

/**
 * A WebSocket handshake by hand, then the header of one masked frame announcing `length` bytes and only the
 * first KiB of it: a server that reads whole frames before checking waits for the rest; one whose limit is
 * below `length` closes at once (1009). Resolves with the close code the server sent, or "waiting".
 */
const announceFrame = (url: string, length: number, ms = 5_000) =>
  new Promise<number | "waiting" | `refused ${number}`>((resolve, reject) => {
    const target = new URL(url)
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: target.pathname + target.search,
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": Buffer.from("0123456789abcdef").toString("base64")
      }
    })
    req.on("response", (response) => resolve(`refused ${response.statusCode ?? 0}`))
    req.on("error", reject)
    req.on("upgrade", (_response, socket: Socket) => {
      const header = Buffer.alloc(14)
      header[0] = 0x81
      header[1] = 0x80 | 127
      header.writeBigUInt64BE(BigInt(length), 2)
      socket.write(Buffer.concat([header, Buffer.alloc(1024, 0x20)]))
      const timer = setTimeout(() => {
        socket.destroy()
        resolve("waiting")
      }, ms)
      socket.on("error", () => {})
      socket.once("data", (data: Buffer) => {
        clearTimeout(timer)
        socket.destroy()
        // A close frame: opcode 8, then its length, then the code.
        resolve((data[0]! & 0x0f) === 8 ? data.readUInt16BE(2) : -1)
      })
    })
    req.end()
  })

const SECRET = "a-long-shared-secret-for-the-rpc-bounds-tests"
const token = await new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime(
  "1h"
)
  .sign(new TextEncoder().encode(SECRET))

describe("/rpc and /ws bounds, open configuration", () => {
  layer(TestServerLive(), { excludeTestServices: true })((it) => {
    it.effect("an undecodable payload or unknown tag is answered with a bounded excerpt, never echoed whole", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const answers = yield* Effect.promise(async () => {
          const socket = await openSocket(wsUrl(url))
          const received = collectMessages(socket, 20_000)
          try {
            const big = "y".repeat(1_000_000)
            request(socket, "1", "AgentStream", { agentId: "assistant", input: { x: big } })
            const exit = await received.next((m) => m._tag === "Exit" && m.requestId === "1")
            socket.send(JSON.stringify({ _tag: "Request", id: "2", tag: big, payload: {}, headers: [] }))
            const defect = await received.next((m) => m._tag === "Defect")
            return [exit, defect]
          } finally {
            socket.close()
          }
        })
        for (const answer of answers) {
          const text = JSON.stringify(answer)
          expect(text.length).toBeLessThan(8 * 1024)
          expect(text).toMatch(/chars\)/)
        }
        expect(answers[0]).toMatchObject({ exit: { _tag: "Failure", cause: { _tag: "Die" } } })
      }))

    it.effect("a client that sends and never reads is closed with 1013 once its answers would pass 4 MiB", () =>
      Effect.gen(function*() {
        const { logs, url } = yield* TestServer
        const outcome = yield* Effect.promise(async () => {
          const socket = await openSocket(wsUrl(url))
          let bytes = 0
          socket.on("message", (data: Buffer) => (bytes += data.length))
          const closed = closeCodeOf(socket, 60_000)
          socket.pause()
          try {
            // Each is answered with a defect of a few hundred bytes: about 25 MB of answers in all.
            for (let i = 0; i < 40_000; i++) {
              request(socket, String(i + 1), "WorkflowAttach", { workflowId: 1, executionId: "x".repeat(200) })
            }
            // Read again once the server has given up on this client (or after a minute, when it never does).
            const deadline = Date.now() + 60_000
            while (!logs.some((line) => line.includes("does not read (1013)")) && Date.now() < deadline) {
              await new Promise((resume) => setTimeout(resume, 100))
            }
            socket.resume()
            return { code: await closed, bytes }
          } finally {
            socket.terminate()
          }
        })
        expect(outcome.code).toBe(1013)
        // What the server held for it: 4 MiB, plus what the kernel's buffers took.
        expect(outcome.bytes).toBeLessThan(16_000_000)
      }))

    it.effect("a frame over the body limit is refused at its header (1009), on /rpc and /ws alike", () =>
      Effect.gen(function*() {
        const { config, url } = yield* TestServer
        const rpc = yield* Effect.promise(() => announceFrame(wsUrl(url), config.bodyLimit + 1))
        const echo = yield* Effect.promise(() => announceFrame(wsUrl(url, "/ws"), config.bodyLimit + 1))
        expect({ rpc, echo }).toEqual({ rpc: 1009, echo: 1009 })
        // Within the limit, the frame is awaited.
        expect(yield* Effect.promise(() => announceFrame(wsUrl(url), config.bodyLimit - 1024, 1_000))).toBe("waiting")
      }))

    it.effect(`one connection holds at most ${MAX_STREAMS_PER_CONNECTION} streams; more are refused until one ends`, () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const outcome = yield* Effect.promise(async () => {
          const socket = await openSocket(wsUrl(url))
          const received = collectMessages(socket, 30_000)
          try {
            // Live log feeds: each sends its first chunk and then waits for an acknowledgement that never comes.
            for (let i = 1; i <= MAX_STREAMS_PER_CONNECTION + 3; i++) {
              request(socket, String(i), "LiveLogs", { limit: 1 })
            }
            const refused = await received.next((m) =>
              m._tag === "Exit" && m.requestId === String(MAX_STREAMS_PER_CONNECTION + 3)
            )
            socket.send(JSON.stringify({ _tag: "Interrupt", requestId: "1" }))
            await received.next((m) => m._tag === "Exit" && m.requestId === "1")
            request(socket, "100", "LiveLogs", { limit: 1 })
            const again = await received.next((m) => (m._tag === "Chunk" || m._tag === "Exit") && m.requestId === "100")
            const open = new Set(
              received.messages.filter((m) => m._tag === "Chunk" && m.requestId !== "100").map((m) => m.requestId)
            )
            return { refused, open: open.size, again: again._tag }
          } finally {
            socket.close()
          }
        })
        expect(outcome.open).toBe(MAX_STREAMS_PER_CONNECTION)
        expect(outcome.refused).toMatchObject({ exit: { cause: { _tag: "Fail", error: { _tag: "TooManyRequests" } } } })
        expect(outcome.again).toBe("Chunk")
      }))

    it.effect(`a caller holds at most ${MAX_CONNECTIONS_PER_CALLER} /rpc connections; the next handshake is a 429`, () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const outcome = yield* Effect.promise(async () => {
          // The sockets of the tests before are let go of asynchronously: retry a refused handshake a while.
          const openSoon = async () => {
            const deadline = Date.now() + 10_000
            for (;;) {
              try {
                return await openSocket(wsUrl(url))
              } catch (error) {
                if (Date.now() > deadline) throw error
                await new Promise((resume) => setTimeout(resume, 100))
              }
            }
          }
          const sockets: Array<WebSocket> = []
          for (let i = 0; i < MAX_CONNECTIONS_PER_CALLER; i++) sockets.push(await openSoon())
          try {
            const refused = await openSocket(wsUrl(url)).then(
              (socket) => (socket.close(), "accepted"),
              (error: Error) => error.message
            )
            const closed = closeCodeOf(sockets[0]!)
            sockets[0]!.close()
            await closed
            const deadline = Date.now() + 10_000
            let after = "refused"
            while (after !== "accepted" && Date.now() < deadline) {
              after = await openSocket(wsUrl(url)).then(
                (socket) => (socket.close(), "accepted"),
                (error: Error) => error.message
              )
            }
            return { refused, after }
          } finally {
            sockets.forEach((socket) => socket.close())
          }
        })
        expect(outcome).toEqual({ refused: "refused: 429", after: "accepted" })
      }))
  })
})

describe("/rpc and /ws under JWT: an unauthenticated socket gets a small message limit", () => {
  const auth = { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [] } }
  layer(TestServerLive({ config: { auth } }), { excludeTestServices: true })((it) => {
    it.effect(`without a token a message over ${ANONYMOUS_MESSAGE_LIMIT} bytes closes the socket (1009); with one it is taken`, () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const length = ANONYMOUS_MESSAGE_LIMIT + 1024
        const anonymous = yield* Effect.promise(() =>
          Promise.all([announceFrame(wsUrl(url), length), announceFrame(wsUrl(url, "/ws"), length)])
        )
        expect(anonymous).toEqual([1009, 1009])
        const withToken = yield* Effect.promise(() =>
          Promise.all([
            announceFrame(wsUrl(url, `/rpc?token=${token}`), length, 1_000),
            announceFrame(wsUrl(url, `/ws?token=${token}`), length, 1_000)
          ])
        )
        expect(withToken).toEqual(["waiting", "waiting"])
        // The handshake's token authorises the calls too: an execution route needs one.
        const answer = yield* Effect.promise(async () => {
          const socket = await openSocket(wsUrl(url, `/rpc?token=${token}`))
          const received = collectMessages(socket)
          try {
            request(socket, "1", "WorkflowStream", {
              workflowId: "approval",
              input: { amount: 1 },
              pad: "p".repeat(length)
            })
            return await received.next((m) => (m._tag === "Chunk" || m._tag === "Exit") && m.requestId === "1")
          } finally {
            socket.close()
          }
        })
        expect(answer._tag).toBe("Chunk")
        // A token that does not verify refuses the handshake.
        expect(yield* Effect.promise(() => announceFrame(wsUrl(url, `/rpc?token=${token}x`), 10))).toBe("refused 401")
      }))
  })
})

/** What a /rpc WorkflowStream with `payload` is answered first: a chunk means it started. */
const firstAnswer = (url: string, payload: string) =>
  Effect.promise(async () => {
    const socket = await openSocket(wsUrl(url))
    const received = collectMessages(socket)
    try {
      socket.send(`{"_tag":"Request","id":"1","tag":"WorkflowStream","headers":[],"payload":${payload}}`)
      return await received.next((m) => (m._tag === "Chunk" || m._tag === "Exit") && m.requestId === "1")
    } finally {
      socket.close()
    }
  })

const refusesLikeHttp = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect("the HTTP input rules hold over /rpc: 1e400, NUL in userId or conversationId, deep nesting", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const cases: ReadonlyArray<[string, RegExp]> = [
        [`{"workflowId":"slow","input":{"ms":1e400}}`, /input\.ms: must be a finite number/],
        [
          `{"workflowId":"approval","input":{"amount":1},"options":{"userId":"a\\u0000b"}}`,
          /options\.userId: must not contain NUL/
        ],
        [
          `{"workflowId":"approval","input":{"amount":1},"options":{"conversationId":"a\\u0000"}}`,
          /options\.conversationId: must not contain NUL/
        ],
        [`{"workflowId":"approval","input":${"[".repeat(5000)}${"]".repeat(5000)}}`, /nested deeper than 64 levels/]
      ]
      for (const [payload, message] of cases) {
        const answer = yield* firstAnswer(url, payload)
        expect(answer).toMatchObject({ _tag: "Exit", exit: { _tag: "Failure" } })
        expect(JSON.stringify(answer.exit.cause)).toMatch(message)
      }
      // The server is still there for a good one.
      expect((yield* firstAnswer(url, `{"workflowId":"approval","input":{"amount":1}}`))._tag).toBe("Chunk")
    }))
}

describe("/rpc input rules on SQLite", () => {
  layer(TestServerLive(), { excludeTestServices: true })((it) => refusesLikeHttp(it))
})

describe.skipIf(!postgresAvailable)("/rpc input rules on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })((it) => refusesLikeHttp(it))
})
