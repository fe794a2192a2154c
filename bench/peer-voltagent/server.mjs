// VoltAgent 2.x serving the bench's agent and pipeline through its own HTTP server (@voltagent/server-hono),
// for `npm run bench -- --peer voltagent` and `--beside voltagent` (docs/benchmarks.md, "Beside VoltAgent").
//
//   node server.mjs --port N     (AI_BASE_URL, AI_MODEL, AI_API_KEY from the env: the bench's fake model)
//
// The same agent as src/examples/agents.ts ("assistant": instructions, the two tools, temperature 0.7,
// 4,000 output tokens, 5 steps) and the same 7-step pipeline as src/examples/workflows.ts, each written the
// way VoltAgent's docs write them. Everything else is VoltAgent's default: its in-memory agent and workflow
// memory, its default observability (in-memory spans), its default logger and level (LOG_LEVEL, "info" in the
// bench, as for ours; at info VoltAgent writes no line per request but the pipeline's audit tap, where ours
// also writes one per agent call and two more per execution).
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { Agent, andThen, createTool, createWorkflowChain, VoltAgent } from "@voltagent/core"
import { honoServer } from "@voltagent/server-hono"
import { parseArgs } from "node:util"
import { z } from "zod"

// ai 6.0.170 and later console.warn on every call whose messages hold a system message, and VoltAgent 2.10.0
// sends the agent's instructions there, with no way to set the AI SDK's allowSystemInMessages: a stderr line
// for every agent request. That one warning is dropped: the peer is measured without it (docs/benchmarks.md).
const warn = console.warn
console.warn = (...args) => {
  if (typeof args[0] === "string" && args[0].startsWith("AI SDK Warning: System messages in the prompt")) return
  warn(...args)
}

const { values } = parseArgs({ options: { port: { type: "string" } } })
const port = Number(values.port)
if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error("--port: a TCP port")
const env = (name) => {
  const value = process.env[name]
  if (value === undefined || value === "") throw new Error(`${name} must be set (the bench sets it to its fake model)`)
  return value
}

// As the service's openai-compatible provider (src/agents/models/providerModel.ts), less its own fetch.
const model = createOpenAICompatible({
  name: "openai-compatible",
  baseURL: env("AI_BASE_URL"),
  apiKey: env("AI_API_KEY"),
  supportsStructuredOutputs: true,
  includeUsage: true
}).chatModel(env("AI_MODEL"))

const getWeather = createTool({
  name: "get_weather",
  description: "Current weather for a location",
  parameters: z.object({ location: z.string().describe("City or place name") }),
  execute: async ({ location }) => ({ location, temperatureC: 21, condition: "sunny" })
})

const add = createTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => ({ sum: a + b })
})

const assistant = new Agent({
  id: "assistant",
  name: "Assistant",
  purpose: "A helpful general assistant that can look up the weather and add numbers",
  instructions: "You are a helpful assistant. Use the get_weather tool for weather questions and the add tool " +
    "for sums. Answer briefly.",
  model,
  tools: [getWeather, add],
  temperature: 0.7,
  maxOutputTokens: 4000,
  maxSteps: 5
})

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const pipeline = createWorkflowChain({
  id: "pipeline",
  name: "Pipeline",
  purpose: "Normalise text, measure it in parallel, double n when large, race two finishers",
  input: z.object({ text: z.string(), n: z.number() }),
  result: z.object({
    text: z.string(),
    upper: z.string(),
    length: z.number(),
    doubled: z.number(),
    winner: z.string()
  })
})
  .andThen({ id: "normalize", execute: async ({ data }) => ({ text: data.text.trim(), n: data.n }) })
  .andAll({
    id: "measure",
    steps: [
      andThen({ id: "upper", execute: async ({ data }) => data.text.toUpperCase() }),
      andThen({ id: "length", execute: async ({ data }) => data.text.length })
    ]
  })
  .andThen({
    id: "merge",
    execute: async ({ data, getStepData }) => {
      const { n, text } = getStepData("normalize").output
      const [upper, length] = data
      return { text, upper, length, doubled: n, n }
    }
  })
  .andWhen({
    id: "double-if-large",
    condition: async ({ data }) => data.n > 10,
    step: andThen({ id: "double", execute: async ({ data }) => ({ ...data, doubled: data.n * 2 }) })
  })
  .andTap({ id: "audit", execute: async ({ data, logger }) => logger.info(`pipeline audit: ${JSON.stringify(data)}`) })
  .andRace({
    id: "finishers",
    steps: [
      andThen({ id: "fast", execute: async ({ data }) => ({ ...data, winner: "fast" }) }),
      andThen({ id: "slow", execute: async ({ data }) => (await sleep(10), { ...data, winner: "slow" }) })
    ]
  })
  .andThen({
    id: "finish",
    execute: async ({ data }) => ({
      text: data.text,
      upper: data.upper,
      length: data.length,
      doubled: data.doubled,
      winner: data.winner
    })
  })

new VoltAgent({
  agents: { assistant },
  workflows: { pipeline },
  server: honoServer({ port, hostname: "127.0.0.1" })
})
// VoltAgent installs its own SIGTERM/SIGINT handlers (a graceful shutdown, then exit).
