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
import { Agent, request } from "node:http"
import { chatRequest } from "./bench/lab.js"
import { startFake } from "./bench/processes.js"

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1]) || 500
const WARMUP = 100

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(p * (sorted.length - 1))]
}

const main = async () => {
  const fake = await startFake()
  try {
    const { port } = new URL(fake.url)
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const raw = (stream: boolean) =>
      new Promise<number>((resolve, reject) => {
        const started = performance.now()
        const payload = JSON.stringify(chatRequest("hi", stream))
        const req = request({
          host: "127.0.0.1",
          port,
          path: "/v1/chat/completions",
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
        }, (response) => {
          let text = ""
          let firstDelta: number | undefined
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => {
            text += chunk
            if (stream && firstDelta === undefined && /"content":"[^"]/.test(text)) firstDelta = performance.now() - started
          })
          response.on("end", () => resolve(firstDelta ?? performance.now() - started))
        })
        req.on("error", reject)
        req.end(payload)
      })

    const model = createOpenAICompatible({ name: "openai-compatible", baseURL: `${fake.url}/v1`, apiKey: "k" })("fake-model")
    const [system, user] = chatRequest("hi", false).messages
    const tools = {
      get_weather: tool({
        description: "Current weather for a location",
        inputSchema: jsonSchema<{ location: string }>({ type: "object", properties: { location: { type: "string" } }, required: ["location"] }),
        execute: async ({ location }) => ({ location })
      }),
      add: tool({
        description: "Add two numbers",
        inputSchema: jsonSchema<{ a: number; b: number }>({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }),
        execute: async ({ a, b }) => ({ sum: a + b })
      })
    }
    const args = { model, system: system.content, messages: [{ role: "user" as const, content: user.content }], tools }
    const sdk = async (stream: boolean) => {
      const started = performance.now()
      if (!stream) {
        await generateText(args)
        return performance.now() - started
      }
      let firstDelta: number | undefined
      for await (const part of streamText(args).fullStream) {
        if (firstDelta === undefined && part.type === "text-delta" && part.text !== "") firstDelta = performance.now() - started
      }
      return firstDelta ?? performance.now() - started
    }

    for (const stream of [false, true]) {
      const rawTimes: Array<number> = []
      const sdkTimes: Array<number> = []
      for (let i = 0; i < WARMUP + rounds; i++) {
        const r = await raw(stream)
        const s = await sdk(stream)
        if (i >= WARMUP) {
          rawTimes.push(r)
          sdkTimes.push(s)
        }
      }
      const name = stream ? "streamText, first text delta (row 4)" : "generateText (row 2)"
      const [rawP50, sdkP50] = [percentile(rawTimes, 0.5), percentile(sdkTimes, 0.5)]
      console.log(
        `${name}: raw p50 ${rawP50.toFixed(2)} ms, SDK p50 ${sdkP50.toFixed(2)} ms (p99 ${percentile(sdkTimes, 0.99).toFixed(2)}), ` +
          `added by the SDK alone +${(sdkP50 - rawP50).toFixed(2)} ms`
      )
    }
  } finally {
    await fake.stop()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
