import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { createServer } from "node:https"
import { join } from "node:path"
import { defineApp } from "../../src/App.js"
import { resolveServerConfig, type ServerConfigShape } from "../../src/config/ServerConfig.js"
import { defaultWebhookSettings, type WebhookSettings } from "../../src/config/WebhookSettings.js"
import { workflow } from "../../src/workflows/Workflow.js"

/** Completion callbacks (issue #33): a local https receiver with the fixture's certificate, and workflows. */

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "webhooks")
export const CERT = readFileSync(join(FIXTURES, "cert.pem"), "utf8")
const KEY = readFileSync(join(FIXTURES, "key.pem"), "utf8")

export interface Received {
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: string
  readonly path: string
}

/**
 * An https server on 127.0.0.1 (a free port) answering each request with the next status of `statuses`
 * (then 200), recording the requests and counting connections; closed with the scope.
 */
export const makeReceiver = (statuses: Array<number> = []) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly received: Array<Received>; readonly connections: () => number; readonly statuses: Array<number>; readonly close: () => void }>((resume) => {
      const received: Array<Received> = []
      let connections = 0
      const server = createServer({ cert: CERT, key: KEY }, (request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), path: request.url ?? "" })
          response.statusCode = statuses.shift() ?? 200
          response.end("ok")
        })
      })
      server.on("secureConnection", () => connections++)
      server.on("connection", () => connections++)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ port, received, connections: () => connections, statuses, close: () => server.close() }))
      })
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
  execute: ({ resumeData, suspend }) => (resumeData === undefined ? suspend("a decision is needed", { asked: true }) : { ok: resumeData.ok })
})

export const webhooksApp = defineApp({ workflows: [echo, waiter] })

/** Settings for tests: 127.0.0.1 allowed, the fixture's CA trusted, quick retries and polls. */
export const webhookTestConfig = (overrides: Partial<WebhookSettings> = {}): Partial<ServerConfigShape> => ({
  webhooks: { ...defaultWebhookSettings, allowedHosts: ["127.0.0.1"], ca: CERT, backoffMs: 100, ...overrides },
  workflows: { ...resolveServerConfig({}, {}).workflows, pollMs: 100 }
})

export { eventually } from "./timers.js"
