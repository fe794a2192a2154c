import type { LanguageModelV4 } from "@ai-sdk/provider"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { readFileSync } from "node:fs"
import type { ChatRequestRecord } from "../scripts/fake-openai.js"
import { defineAgent } from "../src/agents/Agent.js"
import { makeModel } from "../src/agents/models/providerModel.js"
import { WorkingMemoryStore } from "../src/agents/workingMemory/WorkingMemoryStore.js"
import { defineApp } from "../src/App.js"
import { defineTool } from "../src/tools/Tool.js"
import { concierge } from "./fixtures/readme/working-memory.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive, postSse } from "./support/fakeProvider.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #32 item 5: working memory over real sockets, with the fake provider calling
 * `update_working_memory` on cue ("remember that my name is X").
 */

const Profile = Schema.Struct({
  name: Schema.String,
  likes: Schema.optional(Schema.Array(Schema.String))
})

const perConversation = defineAgent({
  id: "profile",
  name: "Profile",
  purpose: "Keeps a profile per conversation",
  instructions: "Be brief.",
  workingMemory: { scope: "conversation", schema: Profile }
})
// A model that, once armed, lets another writer replace the record between the call's read and its tool's write.
let racing: { readonly model: LanguageModelV4; readonly before: () => Promise<void> } | undefined
const racer = defineAgent({
  id: "racer",
  name: "Racer",
  purpose: "Loses a race",
  instructions: "Be brief.",
  model: () => {
    const { before, model } = racing!
    // The provider's model is a class instance: its methods stay on the prototype.
    const wrapped: LanguageModelV4 = Object.create(model)
    return Object.assign(wrapped, {
      doGenerate: async (
        options: Parameters<LanguageModelV4["doGenerate"]>[0]
      ) => (await before(), model.doGenerate(options))
    })
  },
  workingMemory: { scope: "conversation", schema: Profile }
})
const plain = defineAgent({ id: "plain", name: "Plain", purpose: "Has no working memory", instructions: "Be brief." })
// The README's agent is the user-scoped one.
const app = defineApp({ agents: [perConversation, concierge, racer, plain] })

const SECRET = "a-long-shared-secret-for-working-memory-tests"
const sign = (sub: string) =>
  new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
    new TextEncoder().encode(SECRET)
  )
const tokens = { alice: await sign("alice"), bob: await sign("bob") }

const server = (withAuth: boolean) =>
  Layer.unwrapEffect(Effect.map(FakeProvider, (fake) =>
    TestServerLive({
      app,
      config: {
        model: fakeModelSettings(fake),
        ...(withAuth
          ? {
            auth: {
              production: false,
              jwt: {
                secret: Redacted.make(SECRET),
                defaultPrivate: false,
                publicRoutes: ["POST /agents/:id/text", "GET /agents/:id/working-memory"]
              }
            }
          }
          : {})
      }
    }))).pipe(Layer.provideMerge(FakeProviderLive))

const send = (method: string, path: string, body?: unknown, who?: keyof typeof tokens) =>
  Effect.flatMap(TestServer, ({ url }) =>
    fetchJson(`${url}${path}`, {
      method,
      headers: {
        "content-type": "application/json",
        ...(who === undefined ? {} : { authorization: `Bearer ${tokens[who]}` })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))

const systemPrompt = (request: ChatRequestRecord | undefined) => {
  const content = request?.messages.find((message) => message.role === "system")?.content
  return typeof content === "string" ? content : ""
}
const lastRequest = Effect.map(FakeProvider, (fake) => fake.requests.at(-1))
const offered = (request: ChatRequestRecord | undefined) => (request?.tools ?? []).map((tool) => tool.function.name)

describe("working memory", () => {
  it("the README's sample is test/fixtures/readme/working-memory.ts below its imports", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
    const sample = /<!-- readme: working-memory -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    const fixture = readFileSync(new URL("./fixtures/readme/working-memory.ts", import.meta.url), "utf8")
    expect(sample).toBeDefined()
    expect(fixture.slice(fixture.indexOf("\n\n") + 2).replace(/^(\/\/|import).*\n/gm, "").replace(/^\n+/, "")).toBe(
      sample
    )
  })

  it("an agent with working memory may not have a tool of its own named update_working_memory", () => {
    const own = defineTool({
      name: "update_working_memory",
      description: "Mine",
      parameters: Profile,
      execute: () => "ok"
    })
    expect(() => defineAgent({ ...perConversation, id: "clash", tools: [own] }))
      .toThrow("Agent clash: a tool named update_working_memory would hide its working memory's own")
  })

  layer(server(false), { excludeTestServices: true })("without authentication", (it) => {
    it.effect("the model saves it by the tool, reads it in its instructions; GET shows it, DELETE clears it", () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        const first = yield* send("POST", "/agents/profile/text", {
          input: "Please remember that my name is Ada",
          options: { conversationId }
        })
        expect(first.status).toBe(200)
        expect(first.body.data.toolCalls).toEqual([
          expect.objectContaining({ toolName: "update_working_memory", args: { name: "Ada", likes: ["example"] } })
        ])
        expect(first.body.data.toolResults[0].result).toEqual({ saved: true, version: 1 })
        // The first call saw the record empty, with its schema described.
        const firstRequest = (yield* FakeProvider).requests.find((request) =>
          systemPrompt(request).includes("working memory")
        )
        expect(systemPrompt(firstRequest)).toContain("<working_memory_schema>")
        expect(offered(firstRequest)).toContain("update_working_memory")

        yield* send("POST", "/agents/profile/text", { input: "hello again", options: { conversationId } })
        const prompt = systemPrompt(yield* lastRequest)
        expect(prompt).toContain("Be brief.")
        expect(prompt).toContain(`<working_memory>\n{"name":"Ada","likes":["example"]}\n</working_memory>`)

        // A structured-output call reads it too, but has no tools to change it with.
        const object = yield* send("POST", "/agents/profile/object", {
          input: "describe me",
          schema: { type: "object", properties: { name: { type: "string" } } },
          options: { conversationId }
        })
        expect(object.status).toBe(200)
        expect(systemPrompt(yield* lastRequest)).toContain(`{"name":"Ada","likes":["example"]}`)
        expect(systemPrompt(yield* lastRequest)).not.toContain("update_working_memory")

        const read = yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)
        expect(read.status).toBe(200)
        expect(read.body.data).toMatchObject({
          agentId: "profile",
          scope: "conversation",
          value: { name: "Ada", likes: ["example"] },
          version: 1
        })
        expect(typeof read.body.data.updatedAt).toBe("string")

        // A second save replaces the whole value, on top of the version the call read.
        yield* send("POST", "/agents/profile/text", {
          input: "remember that my name is Grace",
          options: { conversationId }
        })
        expect((yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)).body.data)
          .toMatchObject({ value: { name: "Grace" }, version: 2 })

        const deleted = yield* send("DELETE", `/agents/profile/working-memory?conversationId=${conversationId}`)
        expect(deleted.body.data).toEqual({ agentId: "profile", scope: "conversation", deleted: true })
        expect((yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)).body.data)
          .toEqual({ agentId: "profile", scope: "conversation", value: null, version: 0, updatedAt: null })
        yield* send("POST", "/agents/profile/text", { input: "hello once more", options: { conversationId } })
        expect(systemPrompt(yield* lastRequest)).not.toContain("Grace")
      }))

    it.effect("/stream and /chat (the SDK's body: its id is the conversation) read and save it too", () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        const { url } = yield* TestServer
        const streamed = yield* postSse(`${url}/agents/profile/stream`, {
          input: "remember that my name is Lin",
          options: { conversationId }
        })
        expect(streamed.events.map((event) => event.data.type)).toContain("tool-result")
        const chat = yield* postSse(`${url}/agents/profile/chat`, {
          id: conversationId,
          messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "who am I?" }] }],
          trigger: "submit-message"
        })
        expect(chat.status).toBe(200)
        expect(systemPrompt(yield* lastRequest)).toContain(
          `<working_memory>\n{"name":"Lin","likes":["example"]}\n</working_memory>`
        )
      }))

    it.effect("deleting the conversation deletes its working memory", () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        yield* send("POST", "/agents/profile/text", {
          input: "remember that my name is Ada",
          options: { conversationId }
        })
        expect((yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)).body.data.value)
          .toMatchObject({ name: "Ada" })
        const deleted = yield* send("DELETE", `/agents/profile/conversations/${conversationId}`)
        expect(deleted.status).toBe(200)
        expect((yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)).body.data.value)
          .toBeNull()
      }))

    it.effect("a value over 16 KiB and an invalid one are refused to the model, and nothing is stored", () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        const huge = yield* send("POST", "/agents/profile/text", {
          input: `remember that my name is ${"x".repeat(17_000)}`,
          options: { conversationId }
        })
        expect(huge.status).toBe(200)
        expect(huge.body.data.toolResults[0].result).toMatchObject({ saved: false })
        expect(huge.body.data.text).toContain("more than 16384")
        const invalid = yield* send("POST", "/agents/profile/text", {
          input: "remember an invalid name",
          options: { conversationId }
        })
        expect(invalid.status).toBe(200)
        expect(invalid.body.data.text).toMatch(/Invalid input for tool update_working_memory[\s\S]*name/)
        expect(
          (yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`)).body.data.version
        ).toBe(0)
      }))

    it.effect("a lost race is the tool's result: the record that won is kept and shown to the model", () =>
      Effect.gen(function*() {
        const conversationId = `c-${crypto.randomUUID()}`
        const { services } = yield* TestServer
        const store = Context.get(services, WorkingMemoryStore)
        const model = yield* makeModel(fakeModelSettings(yield* FakeProvider))
        let armed = true
        racing = {
          model,
          before: async () => {
            if (!armed) return
            armed = false
            await Effect.runPromise(
              store.replace({ agentId: "racer", scope: "conversation", key: conversationId }, `{"name":"Bob"}`, 0)
            )
          }
        }
        const lost = yield* send("POST", "/agents/racer/text", {
          input: "remember that my name is Ada",
          options: { conversationId }
        })
        expect(lost.status).toBe(200)
        expect(lost.body.data.toolResults[0].result).toMatchObject({ saved: false, current: { name: "Bob" } })
        expect(lost.body.data.text).toContain("changed by another call")
        const kept = yield* store.get({ agentId: "racer", scope: "conversation", key: conversationId })
        expect(Option.map(kept, (row) => [row.value, row.version])).toEqual(Option.some([{ name: "Bob" }, 1]))
      }))

    it.effect("scope rules: no conversationId or no userId means no tool; the routes say why (400), 404 without working memory", () =>
      Effect.gen(function*() {
        const noConversation = yield* send("POST", "/agents/profile/text", { input: "remember that my name is Ada" })
        expect(noConversation.body.data.toolCalls).toEqual([])
        expect(offered(yield* lastRequest)).not.toContain("update_working_memory")
        expect(systemPrompt(yield* lastRequest)).not.toContain("working memory")
        const noUser = yield* send("POST", "/agents/concierge/text", { input: "remember that my name is Ada" })
        expect(noUser.body.data.toolCalls).toEqual([])

        // Without authentication, the call's userId names the user.
        const saved = yield* send("POST", "/agents/concierge/text", {
          input: "remember that my name is Ada",
          options: { userId: "u1" }
        })
        expect(saved.body.data.toolResults[0].result).toEqual({ saved: true, version: 1 })
        yield* send("POST", "/agents/concierge/text", { input: "hi", options: { userId: "u1", conversationId: "any" } })
        expect(systemPrompt(yield* lastRequest)).toContain(`"name":"Ada"`)
        expect((yield* send("GET", "/agents/concierge/working-memory?userId=u1")).body.data).toMatchObject({
          scope: "user",
          value: { name: "Ada" }
        })
        expect((yield* send("GET", "/agents/concierge/working-memory?userId=u2")).body.data.value).toBeNull()

        const missing = yield* send("GET", "/agents/profile/working-memory")
        expect(missing.status).toBe(400)
        expect(missing.body.error).toContain("needs a conversationId")
        expect((yield* send("GET", "/agents/concierge/working-memory")).status).toBe(400)
        const none = yield* send("GET", "/agents/plain/working-memory?conversationId=x")
        expect(none.status).toBe(404)
        expect(none.body.error).toBe("Agent plain has no working memory")
      }))

    it.effect("GET /agents/:id lists update_working_memory; /agents gives its parameters", () =>
      Effect.gen(function*() {
        expect((yield* send("GET", "/agents/profile")).body.data.tools).toEqual(["update_working_memory"])
        expect((yield* send("GET", "/agents/plain")).body.data.tools).toEqual([])
        const listed = (yield* send("GET", "/agents")).body.data.find((agent: { id: string }) =>
          agent.id === "concierge"
        )
        expect(listed.tools[0]).toMatchObject({ name: "update_working_memory", parameters: { required: ["name"] } })
      }))
  })

  layer(server(true), { excludeTestServices: true })("under JWT", (it) => {
    it.effect("each user's record is their own; anonymous callers are not offered the user-scoped tool", () =>
      Effect.gen(function*() {
        yield* send("POST", "/agents/concierge/text", { input: "remember that my name is Alice" }, "alice")
        yield* send("POST", "/agents/concierge/text", { input: "remember that my name is Bob" }, "bob")
        expect((yield* send("GET", "/agents/concierge/working-memory", undefined, "alice")).body.data.value)
          .toMatchObject({ name: "Alice" })
        expect((yield* send("GET", "/agents/concierge/working-memory", undefined, "bob")).body.data.value)
          .toMatchObject({ name: "Bob" })
        // userId may only name the caller.
        expect((yield* send("GET", "/agents/concierge/working-memory?userId=alice", undefined, "bob")).status).toBe(403)
        yield* send("POST", "/agents/concierge/text", { input: "hi" }, "bob")
        expect(systemPrompt(yield* lastRequest)).toContain(`"name":"Bob"`)
        expect(systemPrompt(yield* lastRequest)).not.toContain("Alice")

        const anonymous = yield* send("POST", "/agents/concierge/text", { input: "remember that my name is Eve" })
        expect(anonymous.status).toBe(200)
        expect(anonymous.body.data.toolCalls).toEqual([])
        expect(offered(yield* lastRequest)).not.toContain("update_working_memory")
        expect((yield* send("GET", "/agents/concierge/working-memory")).status).toBe(400)

        // Conversation scope: the same conversation id is two records; Bob's DELETE leaves Alice's.
        const conversationId = `c-${crypto.randomUUID()}`
        yield* send("POST", "/agents/profile/text", {
          input: "remember that my name is Alice",
          options: { conversationId }
        }, "alice")
        yield* send("POST", "/agents/profile/text", { input: "hello", options: { conversationId } }, "bob")
        expect(systemPrompt(yield* lastRequest)).not.toContain("Alice")
        expect(
          (yield* send("DELETE", `/agents/profile/working-memory?conversationId=${conversationId}`, undefined, "bob"))
            .body.data.deleted
        ).toBe(false)
        // Bob's conversation under that id (his history entry) goes; Alice's record stays.
        expect((yield* send("DELETE", `/agents/profile/conversations/${conversationId}`, undefined, "bob")).status)
          .toBe(200)
        expect(
          (yield* send("GET", `/agents/profile/working-memory?conversationId=${conversationId}`, undefined, "alice"))
            .body.data.value
        )
          .toMatchObject({ name: "Alice" })
        expect(
          (yield* send("DELETE", `/agents/profile/working-memory?conversationId=${conversationId}`, undefined, "alice"))
            .body.data.deleted
        ).toBe(true)
      }))
  })
})
