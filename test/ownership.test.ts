import type { LanguageModelV4 } from "@ai-sdk/provider"
import { describe, expect, it, layer, type Vitest } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Option, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { type AgentCallContext, defineAgent } from "../src/agents/Agent.js"
import { builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"
import { defineApp } from "../src/App.js"
import { makeAuthPolicy } from "../src/auth/AuthPolicy.js"
import type { AuthSettings } from "../src/config/AuthSettings.js"
import { ConfigFile, resolveServerConfig } from "../src/config/ServerConfig.js"
import { approval } from "../src/examples/workflows.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Isolation between users under JWT (issue #12): two users and an admin over every route that reads
 * or changes a record. The routes:
 *   agents     POST /agents/:id/{text,stream,chat,object,stream-object} (with a conversationId: memory),
 *              GET /agents/:id/history (history; memory has no read route of its own),
 *              POST /mcp/default/mcp (the agent_<id> tool, with a conversationId)
 *   workflows  POST /workflows/:id/{execute,run,stream}, GET /workflows/executions,
 *              GET /workflows/:id/executions/:executionId/{state,stream},
 *              POST /workflows/:id/executions/:executionId/{suspend,resume,cancel}
 * Observability and log routes (and their WebSockets) are console routes, an operator's, guarded by the
 * console key: they are not per user and not in the matrix.
 */

const SECRET = "a-long-shared-secret-for-ownership-tests"
const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET))
const tokens = {
  alice: await sign({ sub: "alice" }),
  bob: await sign({ sub: "bob", role: "user" }),
  admin: await sign({ sub: "root", roles: ["ops", "admin"] })
}
type Who = keyof typeof tokens

// What agents and models saw, newest last.
const calls: Array<AgentCallContext> = []
const prompts: Array<string> = []
const echo = builtinEchoModel({ wordDelayMs: 0 })
const spyModel: LanguageModelV4 = {
  ...echo,
  doGenerate: (options) => (prompts.push(JSON.stringify(options.prompt)), echo.doGenerate(options)),
  doStream: (options) => (prompts.push(JSON.stringify(options.prompt)), echo.doStream(options))
}
const notes = defineAgent({
  id: "notes",
  name: "Notes",
  purpose: "Remembers conversations",
  instructions: (call) => (calls.push(call), "Be brief."),
  model: spyModel,
  memory: true
})
const whoAmI = workflow({
  id: "whoami",
  name: "Who am I",
  purpose: "Shows the owner",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({
    id: "who",
    execute: ({ user, userId }) => ({ userId, sub: (user as { sub?: string } | null)?.sub ?? null })
  })
  .andAgent({ id: "ask", agent: notes, prompt: ({ data }) => `step of ${data.userId} (${data.sub})` })
const app = defineApp({ agents: [notes], workflows: [approval, whoAmI] })

const auth = (defaultPrivate: boolean): { auth: AuthSettings } => ({
  auth: {
    production: false,
    jwt: { secret: Redacted.make(SECRET), defaultPrivate, publicRoutes: [], admin: { claim: "roles", value: "admin" } }
  }
})

const request = (method: string, body?: unknown, who?: Who): RequestInit => ({
  method,
  headers: {
    "content-type": "application/json",
    ...(who === undefined ? {} : { authorization: `Bearer ${tokens[who]}` })
  },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const mcpAsk = (url: string, who: Who, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const client = new Client({ name: "ownership-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokens[who]}` } }
      })
    )
    const called = await client.callTool({ name: "agent_notes", arguments: args })
    await client.close()
    return called
  })

const matrix = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  const post = (path: string, body: unknown, who?: Who) =>
    Effect.flatMap(TestServer, ({ url }) => fetchJson(`${url}${path}`, request("POST", body, who)))
  const get = (path: string, who?: Who) =>
    Effect.flatMap(TestServer, ({ url }) => fetchJson(`${url}${path}`, request("GET", undefined, who)))

  it.effect(
    "agents: conversations are their owner's; history is scoped; options.userId cannot impersonate",
    () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        const said = (input: string) => ({ input, options: { conversationId } })
        expect((yield* post("/agents/notes/text", said("alice-secret-1"), "alice")).status).toBe(200)
        expect(calls.at(-1)).toMatchObject({ userId: "alice", owner: { userId: "alice" }, user: { sub: "alice" } })

        // Bob names Alice's conversation on every call route: he starts his own, and never sees her words.
        const routes = ["text", "stream", "chat", "object", "stream-object"]
        for (const route of routes) {
          const body = route.includes("object")
            ? { ...said(`bob-${route}`), schema: { type: "object" } }
            : said(`bob-${route}`)
          const answer = yield* post(`/agents/notes/${route}`, body, "bob")
          expect(answer.status, route).toBe(200)
          expect(prompts.at(-1), route).not.toContain("alice-secret")
          expect(calls.at(-1), route).toMatchObject({ userId: "bob", owner: { userId: "bob" } })
        }
        // The MCP agent tool too: a conversation named there is the caller's.
        const { url } = yield* TestServer
        yield* mcpAsk(url, "bob", { input: "bob-mcp", conversationId })
        expect(prompts.at(-1)).not.toContain("alice-secret")
        expect(calls.at(-1)).toMatchObject({ userId: "bob", owner: { userId: "bob" } })
        yield* mcpAsk(url, "alice", { input: "alice-mcp", conversationId })
        expect(prompts.at(-1)).toContain("alice-secret-1")
        expect(prompts.at(-1)).not.toContain("bob-")

        // Alice still has only her conversation (Bob's calls did not write into it).
        yield* post("/agents/notes/text", said("alice-2"), "alice")
        expect(prompts.at(-1)).toContain("alice-secret-1")
        expect(prompts.at(-1)).not.toContain("bob-")
        // Bob's own memory under that id holds his earlier calls (memory is recorded for completed calls).
        yield* post("/agents/notes/text", said("bob-again"), "bob")
        expect(prompts.at(-1)).toContain("bob-mcp")
        expect(prompts.at(-1)).not.toContain("alice-secret")

        // options.userId: another user's is 403 on every call route; one's own (or none) is accepted.
        for (const route of routes) {
          const body = {
            input: "x",
            ...(route.includes("object") ? { schema: { type: "object" } } : {}),
            options: { userId: "alice" }
          }
          const refused = yield* post(`/agents/notes/${route}`, body, "bob")
          expect(refused.status, route).toBe(403)
          expect(refused.body).toEqual({
            success: false,
            error: "options.userId must be the authenticated caller's id (or be left out): it cannot name another user"
          })
        }
        expect(
          (yield* post("/agents/notes/text", { input: "x", options: { userId: "bob", conversationId } }, "bob")).status
        ).toBe(200)
        expect((yield* post("/agents/notes/text", { input: "x", options: { userId: "alice" } }, "admin")).status).toBe(
          403
        )

        // History: each sees only their own entries, whatever they filter by; the admin sees everyone's.
        const history = (who: Who, query = "") =>
          Effect.map(
            get(`/agents/notes/history?limit=100&conversationId=${conversationId}${query}`, who),
            (r) => r.body.data
          )
        const alice = yield* history("alice")
        expect(alice.pagination.total).toBe(3)
        expect(alice.entries.every((e: { userId: string }) => e.userId === "alice")).toBe(true)
        expect((yield* history("alice", "&userId=bob")).pagination.total).toBe(0)
        const bob = yield* history("bob")
        expect(bob.pagination.total).toBe(routes.length + 3)
        expect(bob.entries.every((e: { userId: string }) => e.userId === "bob")).toBe(true)
        expect((yield* history("admin")).pagination.total).toBe(routes.length + 6)
        expect((yield* history("admin", "&userId=alice")).pagination.total).toBe(3)
      }),
    60_000
  )

  it.effect(
    "workflows: executions are their starter's; another user's is 404 exactly like a missing one",
    () =>
      Effect.gen(function*() {
        const start = (who: Who, route = "execute", options: Record<string, unknown> = {}) =>
          post(`/workflows/approval/${route}`, { input: { amount: 500 }, options }, who)
        const started = yield* start("alice")
        expect(started.body.data.status).toBe("suspended")
        const id: string = started.body.data.executionId
        const ran = yield* start("alice", "run")
        expect(ran.status).toBe(201)
        const streamed = yield* start("alice", "stream")
        expect(streamed.status).toBe(200)
        const bobs = yield* start("bob")
        const bobsId: string = bobs.body.data.executionId

        // options.userId names only the caller on every start route.
        for (const route of ["execute", "run", "stream"]) {
          const refused = yield* start("bob", route, { userId: "alice" })
          expect(refused.status, route).toBe(403)
          expect(refused.body.success).toBe(false)
        }
        expect((yield* start("bob", "run", { userId: "bob" })).status).toBe(201)

        // Bob gets exactly what a missing id gets, on every route that reads or changes an execution.
        const missing = `missing-${crypto.randomUUID()}`
        const base = "/workflows/approval/executions"
        const asBob = (executionId: string) => [
          get(`${base}/${executionId}/state`, "bob"),
          get(`${base}/${executionId}/stream`, "bob"),
          post(`${base}/${executionId}/suspend`, {}, "bob"),
          post(`${base}/${executionId}/resume`, { resumeData: { approved: true } }, "bob"),
          post(`${base}/${executionId}/cancel`, {}, "bob")
        ]
        const hers = yield* Effect.all(asBob(id))
        const none = yield* Effect.all(asBob(missing))
        hers.forEach((answer, i) => {
          expect(answer.status, `route ${i}`).toBe(404)
          expect(answer.body, `route ${i}`).toEqual({ ...none[i].body, error: none[i].body.error.replace(missing, id) })
        })

        // Lists show only the caller's executions; the admin's shows everyone's.
        const listed = (who: Who) =>
          Effect.map(
            get("/workflows/executions?workflowId=approval&limit=500", who),
            (r) => r.body.data.map((e: { id: string }) => e.id)
          )
        const alices = yield* listed("alice")
        expect(alices).toContain(id)
        expect(alices).not.toContain(bobsId)
        expect(alices).toHaveLength(3)
        expect(yield* listed("bob")).not.toContain(id)
        expect(yield* listed("admin")).toEqual(expect.arrayContaining([id, bobsId]))

        // The owner reads, follows and steers her own execution; the admin manages anyone's.
        expect((yield* get(`${base}/${id}/state`, "alice")).body.data.status).toBe("suspended")
        const attached = yield* get(`${base}/${id}/stream`, "alice")
        expect(attached.status).toBe(200)
        expect(String(attached.body)).toContain("workflow-suspended")
        const resumed = yield* post(`${base}/${id}/resume`, { resumeData: { approved: true } }, "alice")
        expect(resumed.body.data.status).toBe("completed")
        expect((yield* get(`${base}/${bobsId}/state`, "admin")).status).toBe(200)
        expect((yield* post(`${base}/${bobsId}/cancel`, {}, "admin")).body.data.status).toBe("cancelled")
        const runId: string = ran.body.data.executionId
        expect((yield* post(`${base}/${runId}/resume`, { resumeData: { approved: false } }, "admin")).body.data.status)
          .toBe("completed")
        expect((yield* post(`${base}/${runId}/suspend`, {}, "bob")).status).toBe(404)
      }),
    60_000
  )

  it.effect("steps and the agents they call receive the owner", () =>
    Effect.gen(function*() {
      const done = yield* post("/workflows/whoami/execute", { input: {} }, "alice")
      expect(done.body.data.status).toBe("completed")
      expect(done.body.data.result).toContain("step of alice (alice)")
      expect(calls.at(-1)).toMatchObject({ userId: "alice", user: { sub: "alice" } })
      // The step's agent call is in Alice's history, not Bob's.
      const entries = (who: Who) =>
        Effect.map(get("/agents/notes/history?limit=100", who), (r) =>
          r.body.data.entries.map((e: { input: unknown }) => e.input))
      expect(yield* entries("alice")).toContain("step of alice (alice)")
      expect(yield* entries("bob")).not.toContain("step of alice (alice)")
    }), 60_000)
}

describe("the admin rule", () => {
  const callerFor = (claims: Record<string, unknown>, admin?: { claim: string; value: string }) =>
    Effect.flatMap(Effect.promise(() => sign(claims)), (token) =>
      Effect.flatMap(
        makeAuthPolicy({
          production: false,
          jwt: { secret: Redacted.make(SECRET), defaultPrivate: true, publicRoutes: [], admin }
        }, "127.0.0.1"),
        (policy) =>
          policy.authorizeCaller({
            routeClass: "execution",
            method: "GET",
            path: "/x",
            token: Option.some(token),
            consoleKey: Option.none()
          })
      ))

  it.effect("defaults to role: admin; a configured claim counts when it holds the value, alone or in an array", () =>
    Effect.gen(function*() {
      expect((yield* callerFor({ sub: "a", role: "admin" })).visibility).toEqual({ all: true })
      expect((yield* callerFor({ sub: "a", role: "user" })).visibility).toEqual({ all: false, userId: "a" })
      expect((yield* callerFor({ sub: "a", roles: ["admin"] })).visibility).toEqual({ all: false, userId: "a" })
      const rule = { claim: "groups", value: "ops" }
      expect((yield* callerFor({ sub: "a", groups: ["dev", "ops"] }, rule)).visibility).toEqual({ all: true })
      expect((yield* callerFor({ sub: "a", groups: "ops" }, rule)).visibility).toEqual({ all: true })
      expect((yield* callerFor({ sub: "a", role: "admin" }, rule)).visibility).toEqual({ all: false, userId: "a" })
    }))
})

describe("auth.admin in the config file", () => {
  it("is read, and an empty claim is refused", () => {
    const file = Schema.decodeUnknownSync(ConfigFile)({
      auth: { secret: "s", admin: { claim: "groups", value: "ops" } }
    })
    expect(resolveServerConfig(file, {}).auth.jwt?.admin).toEqual({ claim: "groups", value: "ops" })
    expect(resolveServerConfig({ auth: { secret: "s" } }, {}).auth.jwt?.admin).toBeUndefined()
    expect(() => Schema.decodeUnknownSync(ConfigFile)({ auth: { secret: "s", admin: { claim: "", value: "x" } } }))
      .toThrow()
  })
})

describe("ownership under JWT (SQLite)", () => {
  layer(TestServerLive({ app, config: auth(true) }), { excludeTestServices: true })("defaultPrivate", matrix)

  layer(TestServerLive({ app, config: auth(false) }), { excludeTestServices: true })(
    "public management routes",
    (it) => {
      it.effect("an anonymous caller sees only anonymous records, never a user's", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const started = yield* fetchJson(
            `${url}/workflows/approval/run`,
            request("POST", { input: { amount: 500 } }, "alice")
          )
          const id: string = started.body.data.executionId
          const listed = yield* fetchJson(`${url}/workflows/executions`, request("GET"))
          expect(listed.body.data.map((e: { id: string }) => e.id)).not.toContain(id)
          expect((yield* fetchJson(`${url}/workflows/approval/executions/${id}/state`, request("GET"))).status).toBe(
            404
          )
          expect(
            (yield* fetchJson(`${url}/workflows/approval/executions/${id}/state`, request("GET", undefined, "alice")))
              .status
          ).toBe(200)
        }), 30_000)
    }
  )
})

describe("no authentication: everything stays shared", () => {
  layer(TestServerLive({ app }), { excludeTestServices: true })("open", (it) => {
    it.effect("the body's userId is kept and every record is everyone's", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const conversationId = `c-${crypto.randomUUID()}`
        yield* fetchJson(
          `${url}/agents/notes/text`,
          request("POST", { input: "shared-words", options: { conversationId, userId: "ada" } })
        )
        yield* fetchJson(
          `${url}/agents/notes/text`,
          request("POST", { input: "next", options: { conversationId, userId: "bea" } })
        )
        expect(prompts.at(-1)).toContain("shared-words")
        const history = yield* fetchJson(`${url}/agents/notes/history?conversationId=${conversationId}`)
        expect(history.body.data.entries.map((e: { userId: string }) => e.userId)).toEqual(["bea", "ada"])
        const started = yield* fetchJson(
          `${url}/workflows/approval/run`,
          request("POST", { input: { amount: 500 }, options: { userId: "ada" } })
        )
        const listed = yield* fetchJson(`${url}/workflows/executions`)
        expect(listed.body.data.map((e: { id: string }) => e.id)).toContain(started.body.data.executionId)
      }), 30_000)
  })
})

describe.skipIf(!postgresAvailable)("ownership under JWT (Postgres)", () => {
  layer(PostgresTestServerLive({ app, config: auth(true) }), { excludeTestServices: true })("defaultPrivate", matrix)
})
