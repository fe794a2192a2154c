/**
 * Row 12's app (issue #44, "pay for what you use"): the service embedded the way README "Embedding"
 * does it, serving agents that are src/examples' `assistant` (same instructions, tools, memory and
 * defaults) but for ONE feature each, so each one's cost is its agent's time minus `plain`'s. Their ids
 * are FEATURE_AGENTS in scripts/bench/table.ts.
 *
 *   FEATURE_APP_PACKAGE=<package root> node feature-app.js --port 4102   (the service's environment)
 *
 * The package is loaded from `<root>/dist/index.js` at run time (the build under test; the repository's
 * own by default), and no file of the bench is imported, so the row can copy this file into a
 * reference build's root, where `effect` and the providers resolve to that build's own copies.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type * as Package from "../../src/index.js"

const root = process.env.FEATURE_APP_PACKAGE ?? fileURLToPath(new URL("../../../", import.meta.url))
const fromPackage = <M>(path: string): Promise<M> => import(pathToFileURL(join(root, "dist", path)).href) as Promise<M>

const { defineAgent, defineApp, defineTool, Guardrail, loadConfig, ServiceLive } = await fromPackage<typeof Package>(
  "index.js"
)

// As src/examples/tools.ts: the request the model gets must be byte for byte the assistant's.
const getWeather = defineTool({
  name: "get_weather",
  description: "Current weather for a location",
  tags: ["weather"],
  parameters: Schema.Struct({
    location: Schema.String.annotations({ description: "City or place name" })
  }).annotations({ examples: [{ location: "Paris" }] }),
  execute: ({ location }) => ({ location, temperatureC: 21, condition: "sunny" })
})

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  tags: ["math"],
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }).annotations({ examples: [{ a: 2, b: 3 }] }),
  execute: ({ a, b }) => ({ sum: a + b })
})

// `refund` needs approval; `rebate` is the same tool without it (names and descriptions of one length), so
// `approving` minus `threeTools` is the approval machinery alone, without the third tool's schema in each request.
const refund = defineTool({
  name: "refund",
  description: "Refund an amount to the customer",
  parameters: Schema.Struct({ amount: Schema.Number }),
  execute: ({ amount }) => ({ refunded: amount }),
  needsApproval: true
})

const rebate = defineTool({
  name: "rebate",
  description: "Rebate an amount to the customer",
  parameters: Schema.Struct({ amount: Schema.Number }),
  execute: ({ amount }) => ({ refunded: amount })
})

const assistant = {
  name: "Assistant",
  purpose: "A helpful general assistant that can look up the weather and add numbers",
  instructions: "You are a helpful assistant. Use the get_weather tool for weather questions and the add tool " +
    "for sums. Answer briefly.",
  tools: [getWeather, add],
  memory: true,
  defaults: { maxSteps: 5 }
}

// The model the service makes from AI_PROVIDER=openai-compatible (src/agents/models/providerModel.ts), over
// the same HTTP client when the build has it, so `fallback` differs from `plain` by the wrapper alone.
const nodeFetch = await fromPackage<{ readonly nodeFetch?: typeof fetch }>("agents/models/nodeFetch.js").then(
  (module) => module.nodeFetch,
  () => undefined
)
const fakeModel = () =>
  createOpenAICompatible({
    name: "openai-compatible",
    baseURL: process.env.AI_BASE_URL ?? "http://127.0.0.1:4010/v1",
    apiKey: process.env.AI_API_KEY,
    supportsStructuredOutputs: true,
    includeUsage: true,
    ...(nodeFetch === undefined ? {} : { fetch: nodeFetch })
  }).chatModel(process.env.AI_MODEL ?? "fake-model")

const nothing = () => undefined

const app = defineApp({
  agents: [
    defineAgent({ ...assistant, id: "plain" }),
    defineAgent({
      ...assistant,
      id: "guarded",
      inputGuardrails: [Guardrail.input({ name: "pass-input", check: () => Guardrail.pass })],
      outputGuardrails: [Guardrail.output({ name: "pass-output", check: () => Guardrail.pass })]
    }),
    defineAgent({
      ...assistant,
      id: "hooked",
      onStart: nothing,
      onEnd: nothing,
      onToolStart: nothing,
      onToolEnd: nothing,
      onError: nothing
    }),
    defineAgent({ ...assistant, id: "approving", tools: [getWeather, add, refund] }),
    defineAgent({ ...assistant, id: "threeTools", tools: [getWeather, add, rebate] }),
    defineAgent({
      ...assistant,
      id: "working",
      workingMemory: { scope: "user", schema: Schema.Struct({ name: Schema.String }) }
    }),
    defineAgent({ ...assistant, id: "fallback", model: [fakeModel(), fakeModel()] })
  ]
})

NodeRuntime.runMain(
  loadConfig(process.argv.slice(2), process.env).pipe(
    Effect.flatMap((config) => Layer.launch(ServiceLive(app, config)))
  )
)
