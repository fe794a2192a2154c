/**
 * Row 12's app (issue #44, "pay for what you use"): the service embedded the way README "Embedding"
 * does it, serving agents that are src/examples' `assistant` (its instructions, tools, memory and
 * defaults, loaded from the same build) but for ONE feature each, so each one's cost is its agent's time minus `plain`'s. Their ids
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
import type * as Agents from "../../src/examples/agents.js"
import type * as Tools from "../../src/examples/tools.js"
import type * as Package from "../../src/index.js"

const root = process.env.FEATURE_APP_PACKAGE ?? fileURLToPath(new URL("../../../", import.meta.url))
const fromPackage = <M>(path: string): Promise<M> => import(pathToFileURL(join(root, "dist", path)).href) as Promise<M>

const { defineAgent, defineApp, defineTool, Guardrail, loadConfig, ServiceLive } = await fromPackage<typeof Package>(
  "index.js"
)

// src/examples' own tools and assistant, from the same build: the request the model gets is the assistant's.
const { add, getWeather } = await fromPackage<typeof Tools>("examples/tools.js")
const { assistant: example } = await fromPackage<typeof Agents>("examples/agents.js")

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
  name: example.name,
  purpose: example.purpose,
  instructions: example.instructions,
  tools: [getWeather, add],
  memory: example.memory,
  defaults: example.defaults
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
