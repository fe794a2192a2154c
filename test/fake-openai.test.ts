import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@effect/vitest"
import { generateText, streamText } from "ai"
import type { Ajv } from "ajv"
import addFormatsModule from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { type FakeOpenAI, startFakeOpenAI } from "../scripts/fake-openai.js"

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void

const weatherTool = {
  type: "function",
  function: { name: "get_weather", description: "Weather for a city", parameters: { type: "object" } }
}
const addTool = {
  type: "function",
  function: { name: "add", description: "Adds two numbers", parameters: { type: "object" } }
}

let fake: FakeOpenAI

beforeAll(async () => {
  fake = await startFakeOpenAI({ port: 0 })
})
afterAll(() => fake.close())
beforeEach(() => fake.reset())

const postChat = async (body: object) => {
  const response = await fetch(`${fake.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fake-model", ...body })
  })
  expect(response.status).toBe(200)
  return (await response.json()) as {
    choices: Array<{
      message: {
        content: string | null
        tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>
      }
      finish_reason: string
    }>
    usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number }
  }
}

const userSays = (text: string) => [{ role: "user", content: text }]

const readSseData = async (response: Response): Promise<Array<string>> => {
  const text = await response.text()
  return text.split("\n\n").filter((event) => event.startsWith("data: ")).map((event) => event.slice("data: ".length))
}

describe("fake OpenAI server", () => {
  it("echoes the last user message with word-count usage", async () => {
    const body = await postChat({ messages: [{ role: "system", content: "be brief" }, ...userSays("hello there")] })
    expect(body.choices[0]!.message.content).toBe("You said: hello there")
    expect(body.choices[0]!.finish_reason).toBe("stop")
    expect(body.usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 })
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]!.messages).toHaveLength(2)
  })

  it("calls get_weather with the city after 'in'", async () => {
    const body = await postChat({ messages: userSays("What is the weather in Berlin?"), tools: [weatherTool, addTool] })
    const call = body.choices[0]!.message.tool_calls![0]!
    expect(body.choices[0]!.finish_reason).toBe("tool_calls")
    expect(body.choices[0]!.message.content).toBeNull()
    expect(call.id).toMatch(/^call_\d+$/)
    expect(call.function.name).toBe("get_weather")
    expect(JSON.parse(call.function.arguments)).toEqual({ location: "Berlin" })
    expect(body.usage.completion_tokens).toBe(1)
  })

  it("calls add with numeric arguments", async () => {
    const body = await postChat({ messages: userSays("Please add 2 and -3.5"), tools: [addTool] })
    const call = body.choices[0]!.message.tool_calls![0]!
    expect(call.function.name).toBe("add")
    expect(JSON.parse(call.function.arguments)).toEqual({ a: 2, b: -3.5 })
  })

  it("does not call a tool the request did not offer", async () => {
    const body = await postChat({ messages: userSays("weather in Rome"), tools: [addTool] })
    expect(body.choices[0]!.message.content).toBe("You said: weather in Rome")
  })

  it("reports the tool result after a tool message", async () => {
    const body = await postChat({
      messages: [
        ...userSays("weather in Oslo"),
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: "{\"location\":\"Oslo\"}" }
          }]
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny and 20 degrees" }
      ],
      tools: [weatherTool]
    })
    expect(body.choices[0]!.message.content).toBe("The tool said: sunny and 20 degrees")
    expect(body.usage.prompt_tokens).toBe(3 + 1 + 4)
  })

  it("fills a json_schema response format with a valid value", async () => {
    const schema = {
      type: "object",
      properties: {
        name: { type: "string" },
        email: { type: "string", format: "email" },
        at: { type: "string", format: "date-time" },
        kind: { type: "string", enum: ["small", "large"] },
        version: { const: "v1" },
        score: { type: "number", maximum: 10 },
        count: { type: "integer", minimum: 100 },
        active: { type: "boolean" },
        tags: { type: "array", items: { type: "string" }, minItems: 3 },
        nickname: { anyOf: [{ type: "string" }, { type: "null" }] },
        address: { $ref: "#/$defs/address" },
        legacy: { $ref: "#/definitions/legacy" },
        nothing: { type: "null" }
      },
      required: ["name", "score"],
      additionalProperties: false,
      $defs: { address: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
      definitions: { legacy: { type: "integer", maximum: 7 } }
    }
    const body = await postChat({
      messages: userSays("describe a user"),
      response_format: { type: "json_schema", json_schema: { name: "user", schema, strict: true } }
    })
    const value: unknown = JSON.parse(body.choices[0]!.message.content!)
    const ajv = new Ajv2020({ strict: false })
    addFormats(ajv)
    const validate = ajv.compile(schema)
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true)
    expect(value).toMatchObject({
      kind: "small",
      version: "v1",
      score: 10,
      count: 100,
      legacy: 7,
      tags: ["example", "example", "example"]
    })
  })

  it("streams the answer word by word, then usage and [DONE]", async () => {
    const response = await fetch(`${fake.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "fake-model",
        messages: userSays("stream  these words please"),
        stream: true,
        stream_options: { include_usage: true }
      })
    })
    expect(response.headers.get("content-type")).toBe("text/event-stream")
    const events = await readSseData(response)
    expect(events.at(-1)).toBe("[DONE]")
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event))
    const deltas = chunks.flatMap((chunk) =>
      chunk.choices.map((choice: { delta: { content?: string } }) => choice.delta.content ?? "")
    )
    expect(deltas.join("")).toBe("You said: stream  these words please")
    expect(deltas.filter((delta) => delta !== "")).toHaveLength(6)
    expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk" && chunk.model === "fake-model")).toBe(true)
    expect(chunks.at(-2).choices[0].finish_reason).toBe("stop")
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 }
    })
  })

  it("counts a slow stream aborted by the client as closed early", async () => {
    const controller = new AbortController()
    const response = await fetch(`${fake.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "fake-model", messages: userSays("answer slowly"), stream: true }),
      signal: controller.signal
    })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    const deadline = Date.now() + 2_000
    while (fake.closedEarly() === 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 20))
    expect(fake.closedEarly()).toBe(1)
  })

  it("serves /v1/models, 404 and 400", async () => {
    const models = await fetch(`${fake.url}/v1/models`)
    expect(await models.json()).toEqual({ object: "list", data: [{ id: "fake-model", object: "model" }] })
    const missing = await fetch(`${fake.url}/nope`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: { message: "not found" } })
    const malformed = await fetch(`${fake.url}/v1/chat/completions`, { method: "POST", body: "{not json" })
    expect(malformed.status).toBe(400)
    expect(((await malformed.json()) as { error: { message: string } }).error.message).toContain("malformed JSON")
  })

  it("works with the AI SDK's openai-compatible provider", async () => {
    const provider = createOpenAICompatible({
      name: "fake",
      baseURL: `${fake.url}/v1`,
      supportsStructuredOutputs: true,
      // Without this the provider omits stream_options, so streamed usage would be unknown.
      includeUsage: true
    })
    const model = provider.chatModel("fake-model")
    const generated = await generateText({ model, prompt: "hello there" })
    expect(generated.text).toBe("You said: hello there")
    expect(generated.usage.inputTokens).toBeGreaterThan(0)

    const streamed = streamText({ model, prompt: "hello there" })
    expect(await streamed.text).toBe("You said: hello there")
    expect((await streamed.usage).outputTokens).toBe(4)
    expect(fake.requests.map((request) => request.stream ?? false)).toEqual([false, true])
  })
})
