import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { connect, type Socket } from "node:net"
import { networkInterfaces } from "node:os"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

/** A raw socket, and everything the server sends on it until it closes. */
const rawSocket = (host: string, port: number) =>
  Effect.acquireRelease(
    Effect.async<{ socket: Socket; received: () => string; closed: () => boolean }>((resume) => {
      let text = ""
      let closed = false
      const socket = connect({ host, port }, () =>
        resume(Effect.succeed({ socket, received: () => text, closed: () => closed })))
      socket.setEncoding("utf8")
      socket.on("data", (chunk: string) => (text += chunk))
      socket.on("close", () => (closed = true))
      socket.on("error", () => {})
    }),
    ({ socket }) =>
      Effect.sync(() => socket.destroy())
  )

/** Polls `condition` every 50 ms until it holds, or fails after `deadlineMs`. */
const eventually = (condition: () => boolean, deadlineMs: number, what: string) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!condition()) {
      if (Date.now() - start > deadlineMs) return yield* Effect.die(new Error(`not within ${deadlineMs} ms: ${what}`))
      yield* Effect.sleep("50 millis")
    }
    return Date.now() - start
  })

/** Writes `text` one byte every `everyMs` until the socket closes or the text is sent. */
const dribble = (socket: Socket, text: string, everyMs: number) =>
  Effect.forkScoped(Effect.gen(function*() {
    for (const char of text) {
      if (socket.destroyed || socket.writableEnded) return
      socket.write(char)
      yield* Effect.sleep(everyMs)
    }
  }))

const portOf = (url: string) => Number(new URL(url).port)

const timeouts = { ...resolveServerConfig({}, {}).http, headersTimeoutMs: 600, requestTimeoutMs: 1200 }

layer(TestServerLive({ config: { http: timeouts } }), { excludeTestServices: true })("request time-outs", (it) => {
  it.scoped("a body sent a byte at a time is cut off with 408 after the request time-out", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* rawSocket("127.0.0.1", portOf(url))
      const body = JSON.stringify({ input: { a: 1, b: 2 } }).padEnd(200, " ")
      client.socket.write(
        `POST /tools/add/execute HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`
      )
      yield* dribble(client.socket, body, 100)
      const took = yield* eventually(client.closed, 8_000, "the server closes a connection whose body never ends")
      expect(client.received()).toMatch(/^HTTP\/1\.1 408/)
      expect(took).toBeGreaterThan(800)
    }))

  it.scoped("headers sent a byte at a time are cut off after the headers time-out", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* rawSocket("127.0.0.1", portOf(url))
      yield* dribble(
        client.socket,
        `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nx-padding: ${"x".repeat(200)}\r\n\r\n`,
        100
      )
      yield* eventually(client.closed, 8_000, "the server closes a connection whose headers never end")
      expect(client.received()).toMatch(/^HTTP\/1\.1 408/)
    }))

  it.scoped("a request sent in time is answered", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* rawSocket("127.0.0.1", portOf(url))
      client.socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nconnection: close\r\n\r\n")
      yield* eventually(client.closed, 5_000, "the answer")
      expect(client.received()).toMatch(/^HTTP\/1\.1 200/)
    }))
})

/** An address of this machine that is not loopback, to be a remote client of a server on 0.0.0.0. */
const external = Object.values(networkInterfaces()).flat().find((entry) =>
  entry !== undefined && !entry.internal && entry.family === "IPv4"
)
if (external === undefined) {
  console.warn("SKIPPED connections per client: this machine has no IPv4 address besides loopback")
}

describe.skipIf(external === undefined)("connections per client", () => {
  const http = { ...resolveServerConfig({}, {}).http, maxConnectionsPerClient: 3 }
  layer(TestServerLive({ config: { host: "0.0.0.0", http } }), { excludeTestServices: true })("a cap of 3", (it) => {
    it.scoped("a fourth connection from one address is answered 503 and closed; a closed one frees its place; loopback is not counted", () =>
      Effect.gen(function*() {
        const port = portOf((yield* TestServer).url)
        const host = external!.address
        const held = yield* Effect.all([1, 2, 3].map(() => rawSocket(host, port)))
        const health = (client: Effect.Effect.Success<ReturnType<typeof rawSocket>>) =>
          Effect.sync(() => client.socket.write(`GET /health HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`))
        yield* health(held[0])
        yield* eventually(() => held[0].received().includes("\r\n\r\n"), 5_000, "the first connection's answer")
        expect(held[0].received()).toMatch(/^HTTP\/1\.1 200/)

        const fourth = yield* rawSocket(host, port)
        yield* health(fourth)
        yield* eventually(fourth.closed, 5_000, "the fourth connection is closed")
        expect(fourth.received()).toMatch(/^HTTP\/1\.1 503/)
        expect(fourth.received()).toContain(
          `{"success":false,"error":"Too many connections from ${host} (at most 3 at once)"}`
        )

        held[1].socket.destroy()
        const fifth = yield* Effect.retry(
          Effect.flatMap(
            rawSocket(host, port),
            (client) =>
              Effect.flatMap(
                health(client),
                () => eventually(() => client.received().includes("\r\n\r\n") || client.closed(), 5_000, "an answer")
              )
                .pipe(
                  Effect.flatMap(() =>
                    client.received().startsWith("HTTP/1.1 200") ? Effect.void : Effect.fail("refused")
                  )
                )
          ),
          { times: 20 }
        )
        expect(fifth).toBeUndefined()

        const loopback = yield* Effect.all([1, 2, 3, 4, 5].map(() => rawSocket("127.0.0.1", port)))
        yield* health(loopback[4])
        yield* eventually(() => loopback[4].received().includes("\r\n\r\n"), 5_000, "a loopback answer")
        expect(loopback[4].received()).toMatch(/^HTTP\/1\.1 200/)
      }))
  })
})
