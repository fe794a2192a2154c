import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { join } from "node:path"
import { defineApp } from "../../src/App.js"
import { resolveServerConfig, type ServerConfigShape } from "../../src/config/ServerConfig.js"
import { defaultWebhookSettings, type WebhookSettings } from "../../src/config/WebhookSettings.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

/** Completion callbacks (issue #33): a local https receiver with the fixture's certificate, and workflows. */

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "webhooks")
export const CERT = readFileSync(join(FIXTURES, "cert.pem"), "utf8")
const KEY = readFileSync(join(FIXTURES, "key.pem"), "utf8")

export interface Received {
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: string
  readonly path: string
  /** When its body had come (epoch ms). */
  readonly at: number
}

/**
 * The ports receivers listen on: callbacks may go to 443 only unless an allowed-host entry names its
 * port (issue #42, settled 9), so the test settings list these, and receivers take the first free one.
 */
const POOL_BASE = 20_000 + Math.floor(Math.random() * 40_000)
export const RECEIVER_PORTS = Array.from({ length: 12 }, (_, i) => POOL_BASE + i)
let nextPort = 0

/** `host:port` for each receiver port: the allowed-host entries of `hosts`. */
export const receiverHosts = (...hosts: ReadonlyArray<string>) =>
  hosts.flatMap((host) => RECEIVER_PORTS.map((port) => `${host}:${port}`))

/** Listens on the next free port of the pool. */
const listen = (server: Server, resume: (port: number) => void, tries = 0): void => {
  if (tries >= RECEIVER_PORTS.length) throw new Error("no free receiver port in the pool")
  const port = RECEIVER_PORTS[nextPort++ % RECEIVER_PORTS.length]
  const retry = () => listen(server, resume, tries + 1)
  server.once("error", retry)
  server.listen(port, "127.0.0.1", () => {
    server.off("error", retry)
    resume(port)
  })
}

export interface Receiver {
  readonly port: number
  readonly received: Array<Received>
  readonly connections: () => number
  /** Requests whose headers came and that are not answered (yet). */
  readonly open: () => number
  /** The most requests open at once. */
  readonly mostOpen: () => number
  readonly statuses: Array<number>
  readonly close: () => void
}

/**
 * An https server on 127.0.0.1 (a port of the pool) answering each request with the next status of
 * `statuses` (then 200), or never (`answer: false`), recording the requests and counting connections;
 * closed with the scope.
 */
export const makeReceiver = (statuses: Array<number> = [], options: { readonly answer?: boolean } = {}) =>
  Effect.acquireRelease(
    Effect.async<Receiver>((resume) => {
      const received: Array<Received> = []
      let connections = 0
      let open = 0
      let mostOpen = 0
      const server = createServer({ cert: CERT, key: KEY }, (request, response) => {
        open++
        mostOpen = Math.max(mostOpen, open)
        response.on("close", () => open--)
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          received.push({
            headers: request.headers,
            body: Buffer.concat(chunks).toString("utf8"),
            path: request.url ?? "",
            at: Date.now()
          })
          if (options.answer === false) return
          response.statusCode = statuses.shift() ?? 200
          response.end("ok")
        })
      })
      server.on("secureConnection", () => connections++)
      server.on("connection", () => connections++)
      listen(server, (port) =>
        resume(Effect.succeed({
          port,
          received,
          connections: () => connections,
          open: () => open,
          mostOpen: () => mostOpen,
          statuses,
          close: () => {
            server.close()
            server.closeAllConnections()
          }
        })))
    }),
    (receiver) => Effect.sync(() => receiver.close())
  )

/** Answers its input. */
export const echo = workflow({
  id: "echo",
  name: "Echo",
  purpose: "Answers its input",
  input: Schema.Struct({ text: Schema.String }),
  result: Schema.Struct({ text: Schema.String })
}).andThen({ id: "answer", execute: ({ data }) => ({ text: data.text }) })

/** Suspends until resumed with `{ ok }`. */
export const waiter = workflow({
  id: "waiter",
  name: "Waiter",
  purpose: "Waits for a decision",
  input: Schema.Struct({}),
  result: Schema.Struct({ ok: Schema.Boolean })
}).andThen({
  id: "decide",
  resumeSchema: Schema.Struct({ ok: Schema.Boolean }),
  execute: (
    { resumeData, suspend }
  ) => (resumeData === undefined ? suspend("a decision is needed", { asked: true }) : { ok: resumeData.ok })
})

export const webhooksApp = defineApp({ workflows: [echo, waiter] })

/** Settings for tests: 127.0.0.1 at the receiver ports allowed, the fixture's CA trusted, quick retries and polls. */
export const webhookTestConfig = (overrides: Partial<WebhookSettings> = {}): Partial<ServerConfigShape> => ({
  webhooks: {
    ...defaultWebhookSettings,
    allowedHosts: receiverHosts("127.0.0.1"),
    ca: CERT,
    backoffMs: 100,
    ...overrides
  },
  workflows: { ...resolveServerConfig({}, {}).workflows, pollMs: 100 }
})

export { eventually } from "./timers.js"
