/**
 * The AI SDK's own floor for rows 2 and 4 of the bench: the same chat request the bench sends, made
 * in this process against the fake model, once as a raw HTTP request and once through `ai`'s
 * `generateText` / `streamText` with the openai-compatible provider, interleaved one at a time.
 * No HTTP server, no spans, no store: what the SDK alone adds over the fake is a lower bound on what the
 * service can add. `npm run bench:sdk-floor [-- --rounds N]` (starts its own fake; 500 rounds after 100
 * warm-up rounds by default).
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { generateText, jsonSchema, streamText, tool } from "ai"
import { keepAliveAgent, timed } from "./bench/client.js"
import { chatRequest, fakeTextDelta } from "./bench/lab.js"
import { startFake } from "./bench/processes.js"
import { percentile } from "./bench/table.js"

const roundsAt = process.argv.indexOf("--rounds")
const ROUNDS = roundsAt === -1 ? 500 : Math.max(1, Math.min(100_000, Number(process.argv[roundsAt + 1]) || 500))
const WARMUP = 100

/** The bench's chat request as `generateText` / `streamText` arguments (its tools answer, never called by "hi"). */
const sdkArguments = (baseURL: string) => {
  const { messages: [system, user], tools } = chatRequest("hi", false)
  return {
    model: createOpenAICompatible({ name: "openai-compatible", baseURL, apiKey: "k" })("fake-model"),
    instructions: system.content,
    messages: [{ role: "user" as const, content: user.content }],
    tools: Object.fromEntries(tools.map(({ function: { description, name, parameters } }) => [
      name,
      tool({ description, inputSchema: jsonSchema(parameters), execute: async (input) => input })
    ]))
  }
}

const main = async () => {
  const fake = await startFake()
  const agent = keepAliveAgent()
  try {
    const args = sdkArguments(`${fake.url}/v1`)
    const raw = async (stream: boolean) =>
      (await timed(agent, {
        url: fake.url,
        method: "POST",
        path: "/v1/chat/completions",
        body: chatRequest("hi", stream)
      }, stream ? fakeTextDelta : undefined)).ms
    const sdk = async (stream: boolean) => {
      const started = performance.now()
      if (!stream) {
        await generateText(args)
        return performance.now() - started
      }
      let firstDelta: number | undefined
      for await (const part of streamText(args).stream) {
        if (firstDelta === undefined && part.type === "text-delta" && part.text !== "") {
          firstDelta = performance.now() - started
        }
      }
      return firstDelta ?? performance.now() - started
    }

    for (const stream of [false, true]) {
      const rawTimes: Array<number> = []
      const sdkTimes: Array<number> = []
      for (let round = 0; round < WARMUP + ROUNDS; round++) {
        const [r, s] = [await raw(stream), await sdk(stream)]
        if (round < WARMUP) continue
        rawTimes.push(r)
        sdkTimes.push(s)
      }
      const name = stream ? "streamText, first text delta (row 4)" : "generateText (row 2)"
      const [rawP50, sdkP50] = [percentile(rawTimes, 0.5), percentile(sdkTimes, 0.5)]
      console.log(
        `${name}: raw p50 ${rawP50.toFixed(2)} ms, SDK p50 ${sdkP50.toFixed(2)} ms (p99 ${
          percentile(sdkTimes, 0.99).toFixed(2)
        }), ` +
          `added by the SDK alone +${(sdkP50 - rawP50).toFixed(2)} ms`
      )
    }
  } finally {
    agent.destroy()
    await fake.stop()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
