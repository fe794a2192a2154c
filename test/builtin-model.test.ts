import { describe, expect, it } from "@effect/vitest"
import { generateText, jsonSchema, Output, stepCountIs, streamText, tool } from "ai"
import addFormatsModule from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import type { JSONSchema7 } from "json-schema"
import { BUILTIN_MODEL_ID, builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void

const weatherTool = tool({
  description: "Current weather for a place",
  inputSchema: jsonSchema<{ location: string }>({
    type: "object",
    properties: { location: { type: "string" } },
    required: ["location"]
  }),
  execute: async () => ({ temperatureC: 21 })
})

const addTool = tool({
  inputSchema: jsonSchema<{ a: number; b: number }>({
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"]
  }),
  execute: async ({ a, b }) => a + b
})

describe("builtin/echo model through the AI SDK", () => {
  it("echoes the prompt and reports usage", async () => {
    const result = await generateText({ model: builtinEchoModel(), prompt: "hello there" })
    expect(result.text).toBe("[builtin/echo] You said: hello there")
    expect(result.finishReason).toBe("stop")
    expect(result.usage.inputTokens).toBe(2)
    expect(result.usage.outputTokens).toBe(5)
    expect(result.response.modelId).toBe(BUILTIN_MODEL_ID)
  })

  it("calls a tool it is asked about, then reports the tool's result", async () => {
    const result = await generateText({
      model: builtinEchoModel(),
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(5),
      prompt: "what is the get_weather in Oslo?"
    })
    expect(result.steps[0]?.finishReason).toBe("tool-calls")
    expect(result.steps[0]?.toolCalls).toMatchObject([
      { toolName: "get_weather", toolCallId: "echo-call-1", input: { location: "Oslo" } }
    ])
    expect(result.text).toBe("[builtin/echo] get_weather returned {\"temperatureC\":21}")
    expect(result.steps).toHaveLength(2)
  })

  it("matches a tool name written with spaces and takes numbers from the text", async () => {
    const result = await generateText({
      model: builtinEchoModel(),
      tools: { add: addTool, get_weather: weatherTool },
      prompt: "please add 2 and 40"
    })
    expect(result.toolCalls).toMatchObject([{ toolName: "add", input: { a: 2, b: 40 } }])
    const spaced = await generateText({
      model: builtinEchoModel(),
      tools: { get_weather: weatherTool },
      prompt: "get weather please"
    })
    expect(spaced.toolCalls).toMatchObject([{ toolName: "get_weather", input: { location: "Paris" } }])
  })

  it("does not call tools when the tool choice is none", async () => {
    const result = await generateText({
      model: builtinEchoModel(),
      tools: { add: addTool },
      toolChoice: "none",
      prompt: "add 1 and 2"
    })
    expect(result.toolCalls).toEqual([])
    expect(result.text).toBe("[builtin/echo] You said: add 1 and 2")
  })

  it("fills a structured output schema with a valid value", async () => {
    const schema: JSONSchema7 = {
      type: "object",
      properties: {
        name: { type: "string" },
        score: { type: "number", minimum: 50 },
        count: { type: "integer", maximum: 10 },
        active: { type: "boolean" },
        mood: { type: "string", enum: ["happy", "sad"] },
        tags: { type: "array", items: { type: "string" }, minItems: 2 },
        createdAt: { type: "string", format: "date-time" },
        address: { $ref: "#/$defs/address" },
        nickname: { anyOf: [{ type: "string" }, { type: "null" }] }
      },
      required: ["name", "score", "count", "active", "mood", "tags", "createdAt", "address", "nickname"],
      additionalProperties: false,
      $defs: {
        address: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
      }
    }
    const result = await generateText({
      model: builtinEchoModel(),
      prompt: "x",
      output: Output.object({ schema: jsonSchema<Record<string, unknown>>(schema) })
    })
    const ajv = new Ajv2020({ strict: false })
    addFormats(ajv)
    const validate = ajv.compile(schema)
    expect(validate(result.output), JSON.stringify(validate.errors)).toBe(true)
    expect(result.output).toMatchObject({ score: 50, count: 10, mood: "happy", tags: ["example", "example"] })
  })

  it("streams the same text word by word", async () => {
    const model = builtinEchoModel({ wordDelayMs: 1 })
    const prompt = "tell me something nice"
    const generated = await generateText({ model, prompt })
    const streamed = streamText({ model, prompt })
    const deltas: Array<string> = []
    for await (const delta of streamed.textStream) deltas.push(delta)
    expect(deltas.join("")).toBe(generated.text)
    expect(deltas.length).toBeGreaterThan(1)
    expect(await streamed.finishReason).toBe("stop")
    expect((await streamed.usage).inputTokens).toBe(4)
  })

  it("streams a tool call and the follow-up answer", async () => {
    const streamed = streamText({
      model: builtinEchoModel({ wordDelayMs: 0 }),
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(5),
      prompt: "get_weather in Rome"
    })
    expect(await streamed.text).toBe("[builtin/echo] get_weather returned {\"temperatureC\":21}")
    const [firstStep] = await streamed.steps
    expect(firstStep?.toolCalls).toMatchObject([{ toolName: "get_weather", input: { location: "Rome" } }])
  })

  it("stops streaming promptly when aborted", async () => {
    const abort = new AbortController()
    const prompt = "word ".repeat(400)
    const streamed = streamText({ model: builtinEchoModel(), prompt, abortSignal: abort.signal })
    let received = ""
    let abortedAt = 0
    for await (const delta of streamed.textStream) {
      received += delta
      if (abortedAt === 0) {
        abortedAt = Date.now()
        abort.abort()
      }
    }
    expect(Date.now() - abortedAt).toBeLessThan(500)
    expect(received.length).toBeLessThan(prompt.length)
  })
})
