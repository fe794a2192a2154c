import { afterEach, describe, expect, it } from "@effect/vitest"
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { join } from "node:path"
import { type Cluster, createCluster, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * Completion callbacks on built instances (`npm run build` first) sharing one Postgres (issue #33): the
 * settings from the environment (WEBHOOK_ALLOWED_HOSTS, WEBHOOK_CA_FILE with the fixture's
 * certificate), a receiver failing the first two attempts, and one of the two instances killed (SIGKILL)
 * after the first attempt: the outbox carries the delivery on, under the same `webhook-id`, signed.
 */

const FIXTURES = join(import.meta.dirname, "fixtures", "webhooks")

interface Hit {
  readonly id: string
  readonly timestamp: string
  readonly signature: string
  readonly body: string
}

const receiver = async (statuses: Array<number>) => {
  const hits: Array<Hit> = []
  const server: Server = createServer({
    cert: readFileSync(join(FIXTURES, "cert.pem")),
    key: readFileSync(join(FIXTURES, "key.pem"))
  }, (request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      hits.push({
        id: String(request.headers["webhook-id"]),
        timestamp: String(request.headers["webhook-timestamp"]),
        signature: String(request.headers["webhook-signature"]),
        body: Buffer.concat(chunks).toString("utf8")
      })
      response.statusCode = statuses.shift() ?? 200
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  return { hits, server, port: typeof address === "object" && address !== null ? address.port : 0 }
}

describe.skipIf(!postgresAvailable)("webhooks on Postgres instances", () => {
  let cluster: Cluster | undefined
  let server: Server | undefined
  afterEach(async () => {
    await cluster?.close()
    server?.close()
    cluster = undefined
  })

  it(
    "a receiver failing twice, one instance killed after the first attempt: the other delivers the same signed delivery",
    async () => {
      const hook = await receiver([500, 500])
      server = hook.server
      const c = (cluster = await createCluster({
        ids: ["a", "b"],
        env: { WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${hook.port}`, WEBHOOK_CA_FILE: join(FIXTURES, "cert.pem") }
      }))
      const [a, b] = await c.startAll()
      const secret = (await c.post(a, "/webhooks/secret", {})).body.data.secret as string
      const started = await c.post(b, "/workflows/pipeline/run", {
        input: { text: "hook", n: 1 },
        options: { webhook: { url: `https://127.0.0.1:${hook.port}/done` } }
      })
      expect(started.status).toBe(201)
      const executionId = started.body.data.executionId as string
      await until(() => hook.hits.length >= 1, 60_000, "the first attempt")
      const [first] = await c.query<{ id: string }>(
        `SELECT id FROM webhook_deliveries WHERE execution_id = '${executionId}'`
      )
      // Whichever instance made it, one of the two is killed: the delivery survives in the outbox.
      await c.kill(b)
      const delivered = await until(
        async () => {
          const listed = await c.get(a, `/workflows/pipeline/executions/${executionId}/webhooks`)
          const delivery = listed.body.data?.deliveries?.[0]
          return delivery?.status === "delivered" ? delivery : undefined
        },
        60_000,
        "delivered"
      )
      expect(delivered).toMatchObject({ id: first!.id, attempts: 3, lastStatusCode: 200, event: "execution.completed" })
      expect(hook.hits).toHaveLength(3)
      const key = Buffer.from(secret.slice("whsec_".length), "base64")
      for (const hit of hook.hits) {
        expect(hit.id).toBe(first!.id)
        expect(hit.body).toBe(hook.hits[0]!.body)
        expect(hit.signature).toBe(
          `v1,${createHmac("sha256", key).update(`${hit.id}.${hit.timestamp}.${hit.body}`).digest("base64")}`
        )
      }
      expect(JSON.parse(hook.hits[0]!.body)).toMatchObject({
        type: "execution.completed",
        data: { executionId, workflowId: "pipeline", status: "completed" }
      })
    },
    120_000
  )
})
