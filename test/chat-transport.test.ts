import { expect, layer } from "@effect/vitest"
import { DefaultChatTransport, type UIMessage } from "ai"
import { Context, Effect } from "effect"
import { CHAT_BOUNDS } from "../src/agents/ChatSchemas.js"
import { MemoryStore } from "../src/agents/memory/MemoryStore.js"
import { send, TestChat, textOf } from "./support/chat.js"
import { AgentTestServerLive, FakeProvider, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

const stored = (conversationId: string) =>
  Effect.gen(function*() {
    const { services } = yield* TestServer
    const memory = Context.unsafeGet(services as Context.Context<MemoryStore>, MemoryStore)
    return yield* memory.load("assistant", conversationId, { limit: 100, maxBytes: 1 << 20 })
  })

const historyOf = (url: string, conversationId: string) =>
  Effect.map(
    fetchJson(`${url}/agents/assistant/history?conversationId=${conversationId}&limit=100`),
    (response) => [...response.body.data.entries].reverse() as Array<{ id: string; input: unknown; output: string }>
  )

const userMessage = (text: string) => ({ id: crypto.randomUUID(), role: "user", parts: [{ type: "text", text }] })

layer(AgentTestServerLive())("useChat's DefaultChatTransport at its defaults", (it) => {
  it.effect("answers, remembers only the new exchange, uses the client's messages as context, regenerates in place", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fake = yield* FakeProvider
      fake.reset()
      const conversationId = `chat-${crypto.randomUUID()}`
      const chat = new TestChat(conversationId, `${url}/agents/assistant/chat`)

      yield* send(chat, () => chat.sendMessage({ text: "hello there" }))
      const [question, answer] = chat.messages
      expect(answer?.role).toBe("assistant")
      expect(textOf(answer)).toBe("You said: hello there")
      // The assembled message carries the call's id: that of its history entry.
      expect(answer?.id).toMatch(/^[0-9a-f-]{36}$/)
      const firstHistory = yield* historyOf(url, conversationId)
      expect(firstHistory.map((entry) => entry.id)).toEqual([answer!.id])
      expect(firstHistory[0]).toMatchObject({
        input: [{ id: question!.id, role: "user" }],
        output: "You said: hello there"
      })
      expect(yield* stored(conversationId)).toEqual([
        { role: "user", content: "hello there" },
        { role: "assistant", content: "You said: hello there" }
      ])

      // The follow-up's context is what the client sent, not memory on top of it.
      yield* send(chat, () => chat.sendMessage({ text: "and then?" }))
      expect(textOf(chat.messages[3])).toBe("You said: and then?")
      const followUp = fake.requests.at(-1)!.messages.map((m) => ({ role: m.role, content: m.content }))
      expect(followUp.filter((m) => m.role !== "system")).toEqual([
        { role: "user", content: "hello there" },
        { role: "assistant", content: "You said: hello there" },
        { role: "user", content: "and then?" }
      ])
      expect(yield* stored(conversationId)).toHaveLength(4)

      // Regenerating replaces the last stored answer; the history records the new call.
      const replaced = chat.messages[3]!.id
      yield* send(chat, () => chat.regenerate())
      expect(chat.messages).toHaveLength(4)
      expect(chat.messages[3]!.id).not.toBe(replaced)
      expect(fake.requests.at(-1)!.messages.filter((m) => m.role === "user")).toHaveLength(2)
      expect(yield* stored(conversationId)).toEqual([
        { role: "user", content: "hello there" },
        { role: "assistant", content: "You said: hello there" },
        { role: "user", content: "and then?" },
        { role: "assistant", content: "You said: and then?" }
      ])
      const history = yield* historyOf(url, conversationId)
      expect(history.map((entry) => entry.id)).toEqual([answer!.id, replaced, chat.messages[3]!.id])
      expect(history[2]!.input).toEqual([chat.messages[2]])
    }))

  it.effect("a client's context that memory does not hold reaches the model as sent", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fake = yield* FakeProvider
      fake.reset()
      const conversationId = `chat-${crypto.randomUUID()}`
      // Memory holds an exchange the client no longer shows (edited away): it must not come back.
      yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "forgotten words", options: { conversationId } }))
      const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/agents/assistant/chat` })
      const chunks = yield* Effect.promise(async () => {
        const stream = await transport.sendMessages({
          trigger: "submit-message",
          chatId: conversationId,
          messageId: undefined,
          messages: [userMessage("only this") as UIMessage],
          abortSignal: undefined
        })
        const received: Array<{ type: string; messageId?: string }> = []
        const reader = stream.getReader()
        for (let next = await reader.read(); !next.done; next = await reader.read()) received.push(next.value)
        return received
      })
      expect(chunks[0]).toMatchObject({ type: "start", messageId: expect.stringMatching(/^[0-9a-f-]{36}$/) })
      const sent = fake.requests.at(-1)!.messages.filter((m) => m.role !== "system")
      expect(sent.map((m) => m.content)).toEqual(["only this"])
      expect((yield* stored(conversationId)).map((m) => m.content)).toEqual([
        "forgotten words",
        "You said: forgotten words",
        "only this",
        "You said: only this"
      ])
    }))

  it.effect("the spec's {input} body also gets a message id in its start chunk", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const raw = yield* postSse(`${url}/agents/assistant/chat`, { input: "hi" })
      expect(raw.events[0]!.data).toMatchObject({ type: "start", messageId: expect.stringMatching(/^[0-9a-f-]{36}$/) })
    }))

  it.effect("bad chat bodies are a 400 envelope saying what is wrong; sizes are bounded", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const chatUrl = `${url}/agents/assistant/chat`
      const body = (overrides: Record<string, unknown>) => ({
        id: "c1",
        messages: [userMessage("hi")],
        trigger: "submit-message",
        ...overrides
      })
      const cases: ReadonlyArray<[unknown, RegExp]> = [
        [{}, /^Input validation failed: body: must be either \{input, options\} or the AI SDK's chat request/],
        [{ id: "c1", trigger: "submit-message" }, /^Input validation failed: body: must be either/],
        [body({ messages: [] }), /^Input validation failed: messages: must not be empty$/],
        [body({ trigger: "resume-stream" }), /^Input validation failed: trigger: Expected "submit-message"/],
        [body({ id: "" }), /^Input validation failed: id: must not be empty$/],
        [
          body({ id: "x".repeat(CHAT_BOUNDS.idChars + 1) }),
          /^Input validation failed: id: must be at most 256 characters$/
        ],
        [body({ messages: [{ role: "user" }] }), /^Input validation failed: messages\[0\]\.parts: is missing$/],
        [
          body({ messages: Array.from({ length: CHAT_BOUNDS.messages + 1 }, () => userMessage("hi")) }),
          /^Input validation failed: messages: must have at most 1000 messages$/
        ],
        [
          body({
            messages: [{
              role: "user",
              parts: Array.from({ length: CHAT_BOUNDS.partsPerMessage + 1 }, () => ({ type: "text", text: "a" }))
            }]
          }),
          /^Input validation failed: messages\[0\]\.parts: must have at most 200 parts$/
        ],
        [
          body({ messages: [userMessage("x".repeat(CHAT_BOUNDS.textChars + 1))] }),
          /^Input validation failed: messages\[0\]\.parts\[0\]\.text: must be at most 500000 characters$/
        ],
        [{ input: "" }, /^Input validation failed: input: must not be empty/],
        // What the SDK would refuse only once streaming began (an error event after a 200) is refused up front.
        [
          body({ messages: [{ role: "user", parts: [{ type: "file" }] }] }),
          /^Input validation failed: messages: Invalid prompt: the messages do not match/
        ],
        [
          { input: [{ role: "user", parts: [{ type: "file" }] }] },
          /^Input validation failed: input: Invalid prompt: the messages do not match/
        ]
      ]
      for (const [sent, pattern] of cases) {
        const response = yield* fetchJson(chatUrl, json(sent))
        expect(response.status, JSON.stringify(response.body).slice(0, 300)).toBe(400)
        expect(response.body.success).toBe(false)
        expect(response.body.error).toMatch(pattern)
        expect(response.body.error.length).toBeLessThan(2048)
      }
    }))

  it.effect("/doc describes both bodies of /chat", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec } = yield* fetchJson(`${url}/doc`)
      const schema = spec.paths["/agents/{id}/chat"].post.requestBody.content["application/json"].schema
      const refs = (schema.anyOf ?? []).map((member: { $ref?: string }) => member.$ref ?? "inline")
      expect(refs).toHaveLength(2)
      expect(refs).toContain("#/components/schemas/SdkChatRequest")
      const sdk = spec.components.schemas.SdkChatRequest
      expect(sdk.required).toEqual(expect.arrayContaining(["id", "messages", "trigger"]))
      expect(sdk.properties.messages.maxItems).toBe(CHAT_BOUNDS.messages)
    }))
})
