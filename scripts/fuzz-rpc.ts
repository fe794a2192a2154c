/**
 * The fuzz's /rpc door: the same mutations as over HTTP (scripts/fuzz-mutations.ts), sent as the payloads
 * of raw `@effect/rpc` Request messages on real sockets, and the probes that keep issue #27's items 4, 7
 * and 8 fixed: a client that sends and never reads, a frame announcing 100 MiB, more streams than a
 * connection may hold.
 */
import fc from "fast-check"
import { request as httpRequest } from "node:http"
import type { Socket } from "node:net"
import WebSocket from "ws"
import { bodyText, describeBody, mutate } from "./fuzz-mutations.js"

/** A failure the server sends is at most this long (src/rpc/BoundedSerialization.ts bounds it at 8 KiB). */
const MAX_FAILURE_TEXT = 12 * 1024
const MAX_STREAMS_PER_CONNECTION = 64

/** Known-good payloads of each procedure; a mutation of one is what a case sends. */
const BASES: ReadonlyArray<readonly [string, unknown]> = [
  ["AgentStream", { agentId: "assistant", input: "hello", options: { conversationId: "c", maxSteps: 2 } }],
  ["WorkflowStream", { workflowId: "approval", input: { amount: 5 }, options: { userId: "u" } }],
  ["WorkflowStream", { workflowId: "slow", input: { ms: 1 } }],
  ["WorkflowAttach", { workflowId: "approval", executionId: "none", after: 0 }],
  ["LiveLogs", { level: "info", limit: 5 }]
]

export interface RpcCase {
  readonly tag: string
  readonly mutation: string
  readonly payload: string | undefined
  readonly mustReject: boolean
}

export const rpcCases = (seed: number, count: number): ReadonlyArray<RpcCase> =>
  fc.sample(
    fc.constantFrom(...BASES).chain(([tag, base]) =>
      mutate(base).map((mutated): RpcCase => ({
        tag,
        mutation: mutated.mutation,
        payload: bodyText(mutated.body),
        mustReject: mutated.mustReject
      }))
    ),
    { seed, numRuns: count }
  )

export const describeRpcCase = (fuzzed: RpcCase) =>
  `/rpc ${fuzzed.tag} payload=${
    describeBody(fuzzed.payload === undefined ? { kind: "none" } : { kind: "text", text: fuzzed.payload })
  }`

const open = (url: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(url, { maxPayload: 1 << 30 })
    socket.once("open", () => resolve(socket))
    socket.once("error", reject)
  })

/**
 * Sends one case on a connection of its own and judges the first answer: a failure (Exit or Defect) of
 * bounded size, never a chunk for a payload that must be refused; a close only as 1009 (a payload over
 * the socket's limit). Returns the violation, if any.
 */
export const sendRpcCase = async (url: string, fuzzed: RpcCase, timeoutMs: number): Promise<string | undefined> => {
  const socket = await open(url).catch((error: Error) => error)
  if (socket instanceof Error) return `handshake failed: ${socket.message}`
  try {
    return await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs)
      const done = (verdict: string | undefined) => {
        clearTimeout(timer)
        resolve(verdict)
      }
      socket.on("close", (code) => done(code === 1009 ? undefined : `closed with ${code} before an answer`))
      socket.on("message", (data: Buffer) => {
        const text = data.toString()
        const message = JSON.parse(text) as { _tag: string; requestId?: string; exit?: { _tag: string } }
        if (message._tag === "Pong") return
        if (message._tag === "Defect" || (message._tag === "Exit" && message.exit?._tag === "Failure")) {
          return done(
            text.length > MAX_FAILURE_TEXT ? `a failure of ${text.length} characters (echoed input?)` : undefined
          )
        }
        done(fuzzed.mustReject ? `accepted (${message._tag}) a payload that must be refused` : undefined)
      })
      const payload = fuzzed.payload === undefined ? "" : `,"payload":${fuzzed.payload}`
      socket.send(`{"_tag":"Request","id":"1","tag":${JSON.stringify(fuzzed.tag)},"headers":[]${payload}}`)
    })
  } finally {
    socket.terminate()
  }
}

const frameAnnouncing = (url: string, length: number) =>
  new Promise<string | undefined>((resolve) => {
    const target = new URL(url)
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "MDEyMzQ1Njc4OWFiY2RlZg=="
      }
    })
    req.on("error", (error) => resolve(`frame probe: ${error.message}`))
    req.on("response", (response) => resolve(`frame probe: handshake answered ${response.statusCode}`))
    req.on("upgrade", (_response, socket: Socket) => {
      const header = Buffer.alloc(14)
      header[0] = 0x82
      header[1] = 0x80 | 127
      header.writeBigUInt64BE(BigInt(length), 2)
      socket.write(Buffer.concat([header, Buffer.alloc(1024)]))
      const timer = setTimeout(
        () => (socket.destroy(), resolve(`a frame announcing ${length} bytes was awaited (item 7)`)),
        5_000
      )
      socket.on("error", () => {})
      socket.once("data", (data: Buffer) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(
          (data[0]! & 0x0f) === 8 && data.readUInt16BE(2) === 1009
            ? undefined
            : "a 100 MiB frame was not refused with 1009 (item 7)"
        )
      })
    })
    req.end()
  })

const tooManyStreams = async (url: string) => {
  const socket = await open(url)
  try {
    return await new Promise<string | undefined>((resolve) => {
      const extra = String(MAX_STREAMS_PER_CONNECTION + 1)
      const timer = setTimeout(() => resolve("stream probe: no answer to the stream over the bound (item 8)"), 30_000)
      socket.on("message", (data: Buffer) => {
        const message = JSON.parse(data.toString()) as { _tag: string; requestId?: string; exit?: unknown }
        if (message.requestId !== extra) return
        clearTimeout(timer)
        resolve(
          JSON.stringify(message.exit ?? {}).includes("TooManyRequests")
            ? undefined
            : `stream ${extra} was not refused (item 8)`
        )
      })
      for (let i = 1; i <= MAX_STREAMS_PER_CONNECTION + 1; i++) {
        socket.send(
          JSON.stringify({ _tag: "Request", id: String(i), tag: "LiveLogs", payload: { limit: 1 }, headers: [] })
        )
      }
    })
  } finally {
    socket.terminate()
  }
}

/**
 * A client that sends and never reads: the service must stay up (the heartbeat and the health checks
 * around the probes see to that) and answer undecodable payloads with excerpts (item 4). Whether it closes
 * the client with 1013 or stops reading from it first depends on timing, so the 4 MiB bound itself is
 * test/rpc-bounds.test.ts's (a total of bytes read after resuming measured the machine's load, not the bound).
 */
const neverReads = async (url: string) => {
  const socket = await open(url)
  let largest = 0
  socket.on("message", (data: Buffer) => (largest = Math.max(largest, data.length)))
  let closed = false
  socket.once("close", () => (closed = true))
  const whileOpen = async (ms: number) => {
    const deadline = Date.now() + ms
    while (!closed && Date.now() < deadline) await new Promise((resume) => setTimeout(resume, 100))
  }
  socket.pause()
  const big = JSON.stringify({
    _tag: "Request",
    id: "1",
    tag: "AgentStream",
    payload: { agentId: "assistant", input: { x: "y".repeat(1_000_000) } },
    headers: []
  })
  for (let i = 0; i < 20; i++) socket.send(big.replace("\"id\":\"1\"", `"id":"${i + 1}"`))
  for (let i = 0; i < 40_000; i++) {
    socket.send(`{"_tag":"Request","id":"${100 + i}","tag":"WorkflowAttach","payload":{"workflowId":1},"headers":[]}`)
  }
  await whileOpen(5_000)
  socket.resume()
  await whileOpen(10_000)
  socket.terminate()
  return largest > MAX_FAILURE_TEXT ? `an answer of ${largest} bytes to an undecodable payload (item 4)` : undefined
}

/** The probes of items 4, 7 and 8 against the service's /rpc; each violation's reason. */
export const rpcProbes = async (url: string): Promise<ReadonlyArray<string>> => {
  const verdicts = [await frameAnnouncing(url, 100 * 1024 * 1024), await tooManyStreams(url), await neverReads(url)]
  return verdicts.filter((verdict): verdict is string => verdict !== undefined)
}
