import { SqlClient } from "@effect/sql"
import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { Context, Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { defineAgent } from "../src/agents/Agent.js"
import { builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"
import { defineApp } from "../src/App.js"
import { approval } from "../src/examples/workflows.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const del = (url: string) => fetchJson(url, { method: "DELETE" })

const rowCount = (sql: SqlClient.SqlClient, table: string, column: string, value: string) =>
  Effect.map(
    sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(table)} WHERE ${sql(column)} = ${value}`,
    ([row]) => Number(row.n)
  ).pipe(Effect.orDie)

const deletionTests = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(
    "DELETE /workflows/:id/executions/:executionId: 404 unknown, 400 running or suspended, finished ones go with events and keys",
    () =>
      Effect.gen(function*() {
        const { services, url } = yield* TestServer
        const sql = Context.get(services, SqlClient.SqlClient)
        const execution = (workflowId: string, id: string) => `${url}/workflows/${workflowId}/executions/${id}`

        expect(yield* del(execution("nope", "x"))).toMatchObject({
          status: 404,
          body: { success: false, error: "Workflow nope not found" }
        })
        expect(yield* del(execution("pipeline", "nope"))).toMatchObject({
          status: 404,
          body: { success: false, error: "Execution nope not found" }
        })

        const done = yield* fetchJson(`${url}/workflows/pipeline/execute`, {
          ...json({ input: { text: "x", n: 1 } }),
          headers: { "content-type": "application/json", "idempotency-key": "delete-me" }
        })
        expect(done.body.data.status).toBe("completed")
        const doneId: string = done.body.data.executionId
        expect(yield* rowCount(sql, "workflow_events", "execution_id", doneId)).toBeGreaterThan(0)
        expect(yield* rowCount(sql, "workflow_idempotency_keys", "execution_id", doneId)).toBe(1)

        const suspended = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 999 } }))
        expect(suspended.body.data.status).toBe("suspended")
        const suspendedId: string = suspended.body.data.executionId
        const running = yield* fetchJson(`${url}/workflows/slow/run`, json({ input: { ms: 60_000 } }))
        const runningId: string = running.body.data.executionId

        const refusedSuspended = yield* del(execution("approval", suspendedId))
        expect(refusedSuspended).toMatchObject({ status: 400, body: { success: false } })
        expect(refusedSuspended.body.error).toMatch(/is suspended: only finished executions/)
        const refusedRunning = yield* del(execution("slow", runningId))
        expect(refusedRunning).toMatchObject({ status: 400, body: { success: false } })
        expect(refusedRunning.body.error).toMatch(/is running/)
        expect(yield* rowCount(sql, "workflow_events", "execution_id", suspendedId)).toBeGreaterThan(0)
        expect((yield* fetchJson(`${execution("slow", runningId)}/state`)).status).toBe(200)

        // Under another workflow's path, an execution is not found (and stays).
        expect((yield* del(execution("approval", doneId))).status).toBe(404)

        const deleted = yield* del(execution("pipeline", doneId))
        expect(deleted).toMatchObject({
          status: 200,
          body: { success: true, data: { executionId: doneId, workflowId: "pipeline", deleted: true } }
        })
        expect((yield* fetchJson(`${execution("pipeline", doneId)}/state`)).status).toBe(404)
        expect(yield* rowCount(sql, "workflow_executions", "id", doneId)).toBe(0)
        expect(yield* rowCount(sql, "workflow_events", "execution_id", doneId)).toBe(0)
        expect(yield* rowCount(sql, "workflow_idempotency_keys", "execution_id", doneId)).toBe(0)
        const listed = yield* fetchJson(`${url}/workflows/executions?workflowId=pipeline`)
        expect(listed.body.data.map((e: { executionId: string }) => e.executionId)).not.toContain(doneId)
        expect((yield* del(execution("pipeline", doneId))).status).toBe(404)

        // Once cancelled (finished), the suspended and the running ones can go.
        for (const [workflowId, id] of [["approval", suspendedId], ["slow", runningId]] as const) {
          expect((yield* fetchJson(`${execution(workflowId, id)}/cancel`, json({}))).status).toBe(200)
          expect((yield* del(execution(workflowId, id))).status).toBe(200)
          expect(yield* rowCount(sql, "workflow_events", "execution_id", id)).toBe(0)
        }
      }),
    60_000
  )

  it.effect(
    "DELETE /agents/:id/conversations/:conversationId: memory and history of that conversation only; 404 unknown",
    () =>
      Effect.gen(function*() {
        const { services, url } = yield* TestServer
        const sql = Context.get(services, SqlClient.SqlClient)
        for (const conversationId of ["conv-delete", "conv-delete", "conv-keep"]) {
          const call = yield* fetchJson(
            `${url}/agents/assistant/text`,
            json({ input: "hello there", options: { conversationId } })
          )
          expect(call.status).toBe(200)
        }
        const history = (conversationId: string) =>
          Effect.map(fetchJson(`${url}/agents/assistant/history?conversationId=${conversationId}`), (r) =>
            r.body.data.pagination.total)
        expect(yield* history("conv-delete")).toBe(2)
        const messages = yield* rowCount(sql, "agent_messages", "conversation_id", "conv-delete")
        expect(messages).toBeGreaterThanOrEqual(4)

        expect(yield* del(`${url}/agents/nope/conversations/conv-delete`)).toMatchObject({
          status: 404,
          body: { error: "Agent nope not found" }
        })
        expect(yield* del(`${url}/agents/assistant/conversations/never`)).toMatchObject({
          status: 404,
          body: { success: false, error: "Conversation never not found" }
        })

        const deleted = yield* del(`${url}/agents/assistant/conversations/conv-delete`)
        expect(deleted).toMatchObject({
          status: 200,
          body: {
            success: true,
            data: {
              agentId: "assistant",
              conversationId: "conv-delete",
              deletedMessages: messages,
              deletedHistoryEntries: 2
            }
          }
        })
        expect(yield* history("conv-delete")).toBe(0)
        expect(yield* rowCount(sql, "agent_messages", "conversation_id", "conv-delete")).toBe(0)
        expect(yield* history("conv-keep")).toBe(1)
        expect(yield* rowCount(sql, "agent_messages", "conversation_id", "conv-keep")).toBeGreaterThan(0)
        expect((yield* del(`${url}/agents/assistant/conversations/conv-delete`)).status).toBe(404)
      }),
    60_000
  )

  it.effect("both DELETE routes are in the OpenAPI document with their errors", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec } = yield* fetchJson(`${url}/doc`)
      const execution = spec.paths["/workflows/{id}/executions/{executionId}"]?.delete
      expect(Object.keys(execution?.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "404"]))
      const conversation = spec.paths["/agents/{id}/conversations/{conversationId}"]?.delete
      expect(Object.keys(conversation?.responses ?? {})).toEqual(expect.arrayContaining(["200", "404"]))
    }))
}

layer(TestServerLive(), { excludeTestServices: true })("deleting records (SQLite)", deletionTests)

describe.skipIf(!postgresAvailable)("on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("deleting records (Postgres)", deletionTests)
})

// Under JWT, the DELETE routes find records through the owner-scoped lookups: another user's is 404.
const SECRET = "a-long-shared-secret-for-deletion-tests"
const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET))
const tokens = {
  alice: await sign({ sub: "alice" }),
  bob: await sign({ sub: "bob" }),
  admin: await sign({ sub: "root", role: "admin" })
}
type Who = keyof typeof tokens
const notes = defineAgent({
  id: "notes",
  name: "Notes",
  purpose: "Remembers conversations",
  instructions: "Be brief.",
  model: builtinEchoModel({ wordDelayMs: 0 }),
  memory: true
})
const ownedApp = defineApp({ agents: [notes], workflows: [approval] })
const jwtConfig = {
  auth: { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: true, publicRoutes: [] } }
}
const as = (who: Who | undefined, method: string, body?: unknown): RequestInit => ({
  method,
  headers: {
    "content-type": "application/json",
    ...(who === undefined ? {} : { authorization: `Bearer ${tokens[who]}` })
  },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const ownershipTests = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(
    "another user's execution or conversation is 404 to DELETE and stays; the admin deletes anyone's; no token is 401",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const conversationId = `c-${crypto.randomUUID()}`
        const history = (who: Who) =>
          Effect.map(fetchJson(`${url}/agents/notes/history?conversationId=${conversationId}`, as(who, "GET")), (r) =>
            r.body.data.pagination.total)
        expect(
          (yield* fetchJson(
            `${url}/agents/notes/text`,
            as("alice", "POST", { input: "alice's", options: { conversationId } })
          )).status
        ).toBe(200)
        expect(
          (yield* fetchJson(
            `${url}/agents/notes/text`,
            as("bob", "POST", { input: "bob's", options: { conversationId } })
          )).status
        ).toBe(200)
        const done = yield* fetchJson(
          `${url}/workflows/approval/execute`,
          as("alice", "POST", { input: { amount: 5 } })
        )
        expect(done.body.data.status).toBe("completed")
        const execution = `${url}/workflows/approval/executions/${done.body.data.executionId}`
        const conversation = `${url}/agents/notes/conversations/${conversationId}`

        expect((yield* fetchJson(execution, as(undefined, "DELETE"))).status).toBe(401)
        expect(yield* fetchJson(execution, as("bob", "DELETE"))).toMatchObject({
          status: 404,
          body: { success: false, error: `Execution ${done.body.data.executionId} not found` }
        })
        expect((yield* fetchJson(`${execution}/state`, as("alice", "GET"))).status).toBe(200)

        // Bob's delete under the same conversation id takes his rows only.
        expect(yield* fetchJson(conversation, as("bob", "DELETE"))).toMatchObject({
          status: 200,
          body: { data: { deletedHistoryEntries: 1 } }
        })
        expect(yield* history("alice")).toBe(1)
        expect((yield* fetchJson(conversation, as("bob", "DELETE"))).status).toBe(404)

        expect(yield* fetchJson(conversation, as("admin", "DELETE"))).toMatchObject({
          status: 200,
          body: { data: { deletedHistoryEntries: 1 } }
        })
        expect(yield* history("alice")).toBe(0)
        expect((yield* fetchJson(execution, as("admin", "DELETE"))).status).toBe(200)
        expect((yield* fetchJson(`${execution}/state`, as("alice", "GET"))).status).toBe(404)
      }),
    60_000
  )
}

layer(TestServerLive({ app: ownedApp, config: jwtConfig }), { excludeTestServices: true })(
  "deleting under ownership (SQLite)",
  ownershipTests
)

describe.skipIf(!postgresAvailable)("ownership on Postgres", () => {
  layer(PostgresTestServerLive({ app: ownedApp, config: jwtConfig }), { excludeTestServices: true })(
    "deleting under ownership (Postgres)",
    ownershipTests
  )
})
