import { describe, expect, it } from "@effect/vitest"
import { generateText, jsonSchema, Output, stepCountIs, tool } from "ai"
import type { JSONSchema7Definition } from "json-schema"
import { builtinEchoModel } from "../src/agents/models/BuiltinEchoModel.js"

/** A tool whose execute returns its input, so the answer shows the arguments the model chose. */
const echoTool = (description: string, schema: Record<string, unknown>) =>
  tool({ description, inputSchema: jsonSchema<Record<string, unknown>>(schema), execute: async (input) => input })

/** A type literal, not JSONSchema7 (an interface): both the AI SDK's `jsonSchema` and the readers take it. */
type ObjectSchema = { type: "object"; properties: Record<string, JSONSchema7Definition>; required: Array<string> }
const object = (
  properties: Record<string, JSONSchema7Definition>,
  required = Object.keys(properties)
): ObjectSchema => ({
  type: "object",
  properties,
  required
})

const tools = {
  forecast: echoTool("Tomorrow's outlook for a town", object({ town: { type: "string" }, days: { type: "integer" } })),
  conditions: echoTool("Current weather for a city", object({ city: { type: "string", description: "Which city" } })),
  translate: echoTool(
    "Translate a text into another language",
    object({ text: { type: "string" }, language: { type: "string", enum: ["French", "German", "Spanish"] } })
  ),
  greet: echoTool("Welcome somebody by nickname", object({ nickname: { type: "string" } })),
  search_recipes: echoTool("Recipes by ingredient", object({ query: { type: "string" } })),
  split_bill: echoTool(
    "Divide what a meal cost among diners",
    object({ total: { type: "number" }, diners: { type: "integer" } })
  ),
  lookup_book: echoTool("A book by its title", object({ title: { type: "string" } })),
  total: echoTool("Sum up two numbers", object({ x: { type: "number" }, y: { type: "number" } }))
}

const call = async (prompt: string) => {
  const result = await generateText({ model: builtinEchoModel(), tools, stopWhen: stepCountIs(3), prompt })
  return { calls: result.steps[0]!.toolCalls.map(({ input, toolName }) => ({ toolName, input })), text: result.text }
}

describe("the built-in model reads the tool and its arguments from the user's words", () => {
  it("a word of the tool's name picks it; a number argument and a place come from the text", async () => {
    expect((await call("What will the forecast be in Bergen over 3 days?")).calls).toEqual([
      { toolName: "forecast", input: { town: "Bergen", days: 3 } }
    ])
  })

  it("a word of the description alone picks a tool; a place of several words is kept whole", async () => {
    const answer = await call("How's the weather in Buenos Aires today?")
    expect(answer.calls).toEqual([{ toolName: "conditions", input: { city: "Buenos Aires" } }])
    // Still labelled when it reports the result.
    expect(answer.text).toBe("[builtin/echo] conditions returned {\"city\":\"Buenos Aires\"}")
  })

  it("quoted text, an enum value named in the text, and \"<parameter> is <value>\"", async () => {
    expect((await call("Please translate \"good morning\" into German")).calls).toEqual([
      { toolName: "translate", input: { text: "good morning", language: "German" } }
    ])
    expect((await call("greet me, my nickname is Ziggy")).calls).toEqual([{
      toolName: "greet",
      input: { nickname: "Ziggy" }
    }])
  })

  it("a free-text argument is what follows the tool's name, without filler words", async () => {
    expect((await call("search recipes with chickpeas and spinach")).calls).toEqual([
      { toolName: "search_recipes", input: { query: "chickpeas and spinach" } }
    ])
    expect((await call("could you find the book 'Dune Messiah' for me")).calls).toEqual([
      { toolName: "lookup_book", input: { title: "Dune Messiah" } }
    ])
  })

  it("numbers fill number parameters in order, decimals included", async () => {
    expect((await call("split the bill: 84.5 among 3 of us")).calls).toEqual([
      { toolName: "split_bill", input: { total: 84.5, diners: 3 } }
    ])
  })

  it("words that ask for no tool get the labelled echo, the same every time", async () => {
    const first = await call("Good evening, how are you?")
    expect(first).toEqual({ calls: [], text: "[builtin/echo] You said: Good evening, how are you?" })
    expect(await call("Good evening, how are you?")).toEqual(first)
    // A word of a description is not enough for a tool needing numbers the text does not give.
    expect((await call("my favourite number is 7")).calls).toEqual([])
    expect((await call("the sum of 7 and 8")).calls).toEqual([{ toolName: "total", input: { x: 7, y: 8 } }])
    expect(await call("What will the forecast be in Bergen over 3 days?")).toEqual(
      await call("What will the forecast be in Bergen over 3 days?")
    )
  })

  it("a long text copied into many strings stays within the fill budget", async () => {
    const labels = echoTool(
      "Attach labels",
      object({ labels: { type: "array", minItems: 500, items: { type: "string" } } })
    )
    const result = await generateText({
      model: builtinEchoModel(),
      tools: { labels },
      prompt: `labels ${"x".repeat(5000)}`
    })
    const input = result.toolCalls[0]!.input as { labels: Array<string> }
    expect(input.labels).toHaveLength(500)
    expect(JSON.stringify(input).length).toBeLessThan(400_000)
  })

  it("structured output takes the input's numbers, a place and a named value", async () => {
    const schema = object({
      width: { type: "number" },
      height: { type: "number", maximum: 10 },
      destination: { type: "string" },
      colour: { type: "string" },
      size: { type: "string", enum: ["small", "medium", "large"] },
      createdAt: { type: "string", format: "date-time" },
      count: { type: "integer" }
    })
    const result = await generateText({
      model: builtinEchoModel(),
      prompt: "a large crate 30 wide and 12.5 high, colour teal, shipped to Valparaiso",
      output: Output.object({ schema: jsonSchema<Record<string, unknown>>(schema) })
    })
    expect(result.output).toEqual({
      width: 30,
      height: 10, // 12.5 within the schema's maximum
      destination: "Valparaiso",
      colour: "teal",
      size: "large",
      createdAt: "2024-01-01T00:00:00.000Z",
      count: 42 // no number left: the fixed example
    })
  })
})
