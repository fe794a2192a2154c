import { expect, it, layer } from "@effect/vitest"
import { Context, Effect, JSONSchema, Layer, LogLevel, Redacted, Schema } from "effect"
import { join } from "node:path"
import { expectTypeOf } from "vitest"
import { defineAgent } from "../src/agents/Agent.js"
import { prepareOutput } from "../src/agents/AgentOutput.js"
import { AgentRegistry } from "../src/agents/AgentRegistry.js"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { triage } from "../src/examples/workflows.js"
import { ServicesLive } from "../src/Service.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { AgentTestServerLive, FakeProvider } from "./support/fakeProvider.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #30 item 4 and settled 6, 9, 15: andAgent takes the agent object (registered with the app when
// the layer builds), an Effect Schema `output` (its JSON Schema made inside, the answer decoded) and
// `map`; AgentRegistry.call calls an agent by reference. The model is the fake OpenAI-compatible
// provider over HTTP, refusing what OpenAI's strict structured outputs refuse.

// Referenced only by workflows: none of these is in the app's `agents`.
const support = defineAgent({ id: "support", name: "Support", purpose: "Answers customers", instructions: "Be brief." })
const nested = defineAgent({
  id: "nested",
  name: "Nested",
  purpose: "Only a child workflow asks it",
  instructions: "Be brief."
})

class Address extends Schema.Class<Address>("Address")({ city: Schema.String, zip: Schema.optional(Schema.String) }) {}
const Profile = Schema.Struct({
  name: Schema.String,
  nickname: Schema.optional(Schema.String),
  home: Address,
  past: Schema.Array(Address)
})

const greet = workflow({
  id: "greet",
  name: "Greet",
  purpose: "text",
  input: Schema.Struct({ who: Schema.String }),
  result: Schema.Unknown
})
  .andAgent({ id: "hello", agent: support, prompt: ({ data }) => Effect.succeed(`hello ${data.who}`) })
  .andThen({ id: "measure", execute: ({ data, steps }) => ({ text: data, length: steps.hello.length }) })

const profile = workflow({
  id: "profile",
  name: "Profile",
  purpose: "structured",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andAgent({ id: "ask", agent: support, prompt: () => Promise.resolve("describe someone"), output: Profile })
  .andThen({
    id: "read",
    execute: ({ data }) => ({
      name: data.name,
      nickname: data.nickname ?? null,
      city: data.home.city,
      isAddress: data.home instanceof Address,
      past: data.past.length
    })
  })

const child = workflow({
  id: "child",
  name: "Child",
  purpose: "asks nested",
  input: Schema.Struct({ who: Schema.String }),
  result: Schema.String
})
  .andAgent({ id: "child-ask", agent: nested, prompt: ({ data }) => `child ${data.who}` })

const parent = workflow({
  id: "parent",
  name: "Parent",
  purpose: "runs child",
  input: Schema.Struct({ who: Schema.String }),
  result: Schema.String
})
  .andWorkflow({ id: "run-child", workflow: child })

const refused = workflow({
  id: "refused",
  name: "Refused",
  purpose: "answer fails its schema",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andAgent({
    id: "bad",
    agent: support,
    prompt: () => "a code",
    // The refinement is not in the JSON Schema: the fake's "example" passes the provider and fails decoding.
    output: Schema.Struct({
      code: Schema.String.pipe(Schema.filter((code) => code !== "example", { message: () => "not example" }))
    })
  })

const app = defineApp({ workflows: [greet, profile, parent, refused, triage] })

const execute = (url: string, id: string, input: unknown) =>
  fetchJson(`${url}/workflows/${id}/execute`, json({ input }))

layer(AgentTestServerLive(app, { strictSchemas: true }), { excludeTestServices: true })(
  "andAgent by reference, over HTTP",
  (it) => {
    it.effect("an agent only a workflow (or a child workflow) references is registered: GET /agents lists it", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const agents = yield* fetchJson(`${url}/agents`)
        expect(agents.status).toBe(200)
        expect(agents.body.data.map((agent: { id: string }) => agent.id).sort()).toEqual([
          "assistant",
          "nested",
          "support"
        ])
      }))

    it.effect("text: the agent's text is the next step's data; a child's andAgent runs too", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const greeted = yield* execute(url, "greet", { who: "Ada" })
        expect(greeted.status).toBe(200)
        expect(greeted.body.data.result).toEqual({ text: "You said: hello Ada", length: 19 })
        const fromChild = yield* execute(url, "parent", { who: "Bo" })
        expect(fromChild.body.data.result).toBe("You said: child Bo")
      }))

    it.effect("output Schema ($defs/$ref, optional fields) through the provider's strict structured output: decoded", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const fake = yield* FakeProvider
        fake.reset()
        const response = yield* execute(url, "profile", {})
        expect(response.status).toBe(200)
        expect(response.body.data.result).toEqual({
          name: "example",
          nickname: "example",
          city: "example",
          isAddress: true,
          past: 1
        })
        const format = fake.requests.at(-1)?.response_format
        expect(format).toMatchObject({ type: "json_schema", json_schema: { strict: true } })
        const sent = JSON.stringify(format)
        expect(sent).not.toContain("$ref")
        expect(sent).not.toContain("$defs")
      }))

    it.effect("output Schema and map: the example triage workflow gives map's result", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* execute(url, "triage", { message: "Two mugs arrived broken" })
        expect(response.status).toBe(200)
        expect(response.body.data.result).toEqual({
          message: "Two mugs arrived broken",
          category: "billing",
          urgent: true,
          items: 42
        })
      }))

    it.effect("an answer that does not decode fails the step with a message naming the agent and the schema", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* execute(url, "refused", {})
        expect(response.status).toBe(500)
        expect(response.body.error).toContain(
          "Failed to execute workflow: step bad: agent support answered with an object that does not match its output schema"
        )
        expect(response.body.error).toContain("not example")
      }))

    it.effect("Effect's JSON Schema as is would be refused by a strict provider (what the test above guards against)", () =>
      Effect.gen(function*() {
        const { services } = yield* TestServer
        const agents = Context.get(services, AgentRegistry)
        const error = yield* Effect.flip(
          agents.object("support", { input: "describe someone", schema: JSONSchema.make(Profile) })
        )
        expect(error.message).toContain("Invalid schema for response_format")
      }))

    it.effect("AgentRegistry.call: by reference, text or the decoded output; another object under the id is NotFound", () =>
      Effect.gen(function*() {
        const { services } = yield* TestServer
        const agents = Context.get(services, AgentRegistry)
        const text = yield* agents.call(support, { input: "hi" })
        expect(text.text).toBe("You said: hi")
        const decoded = yield* agents.call(support, { input: "describe someone", output: Profile })
        expect(decoded.home).toBeInstanceOf(Address)
        expect(decoded.past[0].city).toBe("example")
        const impostor = yield* Effect.flip(agents.call({ ...support }, { input: "hi" }))
        expect(impostor).toMatchObject({
          _tag: "NotFound",
          message: "Agent support is not the agent registered under that id"
        })
        const stranger = yield* Effect.flip(agents.call({ ...support, id: "stranger" }, { input: "hi" }))
        expect(stranger).toMatchObject({ _tag: "NotFound", message: "Agent stranger is not registered in this app" })
      }))
  }
)

layer(TestServerLive({ app }), { excludeTestServices: true })(
  "andAgent with an output Schema on the built-in model",
  (it) => {
    it.effect("the built-in model's object decodes too", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* execute(url, "profile", {})
        expect(response.status).toBe(200)
        expect(response.body.data.result).toMatchObject({ isAddress: true })
        const sorted = yield* execute(url, "triage", { message: "Two mugs arrived broken" })
        expect(sorted.status).toBe(200)
        expect(sorted.body.data.result).toMatchObject({
          message: "Two mugs arrived broken",
          urgent: expect.any(Boolean)
        })
      }))
  }
)

it("a strict model's null in an optional property is dropped before decoding", () => {
  const prepared = prepareOutput(Profile)
  const answer = {
    name: "Ada",
    nickname: null,
    home: { city: "Oslo", zip: null },
    past: [{ city: "Bergen", zip: "5003" }]
  }
  const decoded = Effect.runSync(prepared.decode("support", answer))
  expect(decoded).toEqual({
    name: "Ada",
    home: new Address({ city: "Oslo" }),
    past: [new Address({ city: "Bergen", zip: "5003" })]
  })
  expect("nickname" in decoded).toBe(false)
  // Every property is required, an optional one nullable; the class is inlined.
  expect(prepared.jsonSchema).toMatchObject({
    required: ["name", "nickname", "home", "past"],
    properties: {
      nickname: { anyOf: [{ type: "string" }, { type: "null" }] },
      home: { type: "object", required: ["city", "zip"] }
    }
  })
})

it.scoped("an andAgent agent that is another object under a registered id fails the layer with DuplicateDefinition", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = {
      ...resolveServerConfig({ port: 0 }, {}),
      databaseUrl: Redacted.make(`file:${join(dir, "dup.db")}`),
      logLevel: LogLevel.None
    }
    const impostor = defineAgent({ ...support, instructions: "Someone else." })
    const clash = workflow({
      id: "clash",
      name: "Clash",
      purpose: "p",
      input: Schema.Struct({}),
      result: Schema.String
    })
      .andAgent({ id: "ask", agent: impostor, prompt: () => "hi" })
    for (
      const conflicting of [
        defineApp({ agents: [support], workflows: [clash] }),
        defineApp({ workflows: [greet, clash] })
      ]
    ) {
      const error = yield* Effect.flip(Layer.build(ServicesLive(conflicting, config)))
      expect(error).toMatchObject({
        _tag: "DuplicateDefinition",
        message: "Two different agents have the id \"support\""
      })
    }
  }))

it("JSONSchema.make's value is taken wherever a JSON Schema is, without a cast (the input/output is then unknown)", () => {
  const root: JSONSchema.JsonSchema7Root = JSONSchema.make(Schema.Struct({ word: Schema.String }))
  const tool = defineTool({
    name: "json_root",
    description: "Takes Effect's JSON Schema value as its parameters",
    parameters: root,
    execute: (input) => {
      expectTypeOf(input).toEqualTypeOf<unknown>()
      return input
    }
  })
  expect(tool.decode({ word: 1 })._tag).toBe("Left")
  const asked = workflow({ id: "json-root", name: "J", purpose: "p", input: Schema.Struct({}), result: Schema.Unknown })
    .andAgent({ id: "ask", agent: support, prompt: () => "x", output: root })
    .andThen({
      id: "after",
      execute: ({ data }) => {
        expectTypeOf(data).toEqualTypeOf<unknown>()
        return data
      }
    })
  expect(asked.steps[0]).toMatchObject({ type: "andAgent", output: root })
  // The agent registry's `object` (the HTTP route's call) takes it too.
  expectTypeOf(root).toMatchTypeOf<Parameters<AgentRegistry["Type"]["object"]>[1]["schema"]>()
})

// The agent an andAgent step calls is bound to the app's context as the app's own agents are: its
// dynamic instructions and its tool use a service of the user's own, provided by the layer.
class Tone extends Context.Tag("app/Tone")<Tone, { readonly word: string }>() {}
const toned = defineAgent({
  id: "toned",
  name: "Toned",
  purpose: "Answers in a tone",
  instructions: () => Effect.map(Tone, (tone) => `Answer ${tone.word}.`),
  tools: [
    defineTool({
      name: "add",
      description: "Adds two numbers in the tone",
      parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
      execute: ({ a, b }) => Effect.map(Tone, (tone) => `${tone.word} ${a + b}`)
    })
  ]
})
const tonedFlow = workflow({
  id: "toned",
  name: "Toned",
  purpose: "p",
  input: Schema.Struct({}),
  result: Schema.String
})
  .andAgent({ id: "sum", agent: toned, prompt: () => Effect.map(Tone, (tone) => `add 2 and 3 (${tone.word})`) })

layer(AgentTestServerLive(defineApp({ workflows: [tonedFlow] }), undefined, Layer.succeed(Tone, { word: "gently" })), {
  excludeTestServices: true
})("an andAgent agent using a service of the user's own", (it) => {
  it.effect("its prompt, instructions and tool get the service the layer provides", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fake = yield* FakeProvider
      const response = yield* execute(url, "toned", {})
      expect(response.status).toBe(200)
      expect(response.body.data.result).toBe("The tool said: gently 5")
      expect(JSON.stringify(fake.requests[0]?.messages)).toContain("Answer gently.")
    }))
})
