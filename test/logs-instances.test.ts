import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import WebSocket from "ws"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { freePort, killed, type Spawned, spawnMain, waitForHttp } from "./support/process.js"
import { type CollectedMessages, collectMessages } from "./support/sockets.js"

const running: Array<Spawned> = []
afterEach(() => {
  running.splice(0).forEach(killed)
})

const start = async (databaseUrl: string, instanceId: string) => {
  const port = await freePort()
  const server = spawnMain(["--port", String(port)], {
    env: { DATABASE_URL: databaseUrl, SERVICE_INSTANCE_ID: instanceId }
  })
  running.push(server)
  await waitForHttp(port).catch((error) => {
    throw new Error(`${instanceId} did not start: ${error}\n${server.stderr()}`)
  })
  return `http://127.0.0.1:${port}`
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((
    r
  ) => r.json())

/** A WebSocket that collects its JSON messages, once open. */
const listen = (url: string) =>
  new Promise<CollectedMessages & { socket: WebSocket }>((resolve, reject) => {
    const socket = new WebSocket(url)
    const collected = collectMessages(socket)
    socket.on("error", reject)
    socket.on("open", () => resolve({ socket, ...collected }))
  })

const until = async <A>(read: () => Promise<A>, done: (a: A) => boolean, ms = 10_000): Promise<A> => {
  const deadline = Date.now() + ms
  let value = await read()
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    value = await read()
  }
  return value
}

const scenario = async (databaseUrl: string) => {
  // One after the other: concurrent migrations are another part's concern.
  const a = await start(databaseUrl, "instance-a")
  const b = await start(databaseUrl, "instance-b")
  const ws = b.replace(/^http/, "ws")
  const logs = await listen(`${ws}/ws/logs?workflowId=pipeline`)
  await logs.next((m) => m.type === "initial")
  const observed = await listen(`${ws}/ws/observability?entityType=workflow&entityId=pipeline`)
  await observed.next((m) => m.type === "CONNECTION_SUCCESS")

  const onA = await post(`${a}/workflows/pipeline/execute`, { input: { text: "from a", n: 2 } })
  const executionId: string = onA.data.executionId
  expect(onA.data.status).toBe("completed")

  // B's query includes what A logged, naming A.
  const fromA = await until(
    () =>
      fetch(`${b}/api/logs?executionId=${executionId}`).then((r) => r.json()).then((body) => body.data as Array<any>),
    (entries) => entries.some((entry) => entry.message === "workflow completed")
  )
  expect(fromA.map((entry) => entry.message)).toEqual(
    expect.arrayContaining(["workflow started", "workflow completed"])
  )
  expect(new Set(fromA.map((entry) => entry.instance))).toEqual(new Set(["instance-a"]))

  // B's live feeds deliver A's entries and span ends.
  const update = await logs.next((m) =>
    m.type === "update" && m.logs[0].executionId === executionId && m.logs[0].message === "workflow completed"
  )
  expect(update.logs[0].instance).toBe("instance-a")
  const spanEnd = await observed.next((m) =>
    m.type === "OBSERVABILITY_EVENT" && m.data.type === "span:end" &&
    m.data.span.attributes["execution.id"] === executionId
  )
  expect(spanEnd.data.span.attributes).toMatchObject({ "entity.type": "workflow", "entity.id": "pipeline" })
  const logEvent = await observed.next((m) => m.type === "OBSERVABILITY_LOG" && m.data.executionId === executionId)
  expect(logEvent.data).toMatchObject({ instance: "instance-a", workflowId: "pipeline" })

  // B's own entries come once, not again through the store.
  const onB = await post(`${b}/workflows/pipeline/execute`, { input: { text: "from b", n: 3 } })
  const ownId: string = onB.data.executionId
  await logs.next((m) =>
    m.type === "update" && m.logs[0].executionId === ownId && m.logs[0].message === "workflow completed"
  )
  // Long enough for B's poller to have read its own rows back several times.
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  const own = logs.messages.filter((m) => m.type === "update" && m.logs[0].executionId === ownId)
  const ownMessages = own.map((m) => m.logs[0].message)
  expect(ownMessages).toEqual(expect.arrayContaining(["workflow started", "workflow completed"]))
  expect(new Set(ownMessages).size).toBe(ownMessages.length)
  expect(own.every((m) => m.logs[0].instance === "instance-b")).toBe(true)
  const fromALive = logs.messages.filter((m) => m.type === "update" && m.logs[0].executionId === executionId)
  expect(fromALive.map((m) => m.logs[0].message)).toEqual(fromA.map((entry) => entry.message))

  logs.socket.close()
  observed.socket.close()
}

describe.skipIf(!postgresAvailable)("logs and spans across instances on one Postgres", () => {
  it.scopedLive(
    "what A logs and traces shows in B's /api/logs, /ws/logs and /ws/observability, named for A",
    () => Effect.flatMap(freshPostgresDatabase, (databaseUrl) => Effect.promise(() => scenario(databaseUrl))),
    90_000
  )
})
