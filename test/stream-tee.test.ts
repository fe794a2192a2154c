import { streamText } from "ai"
import { MockLanguageModelV3, simulateReadableStream } from "ai/test"
import { describe, expect, it } from "vitest"
import { fullStreamAlone } from "../src/agents/generation/eventStream.js"

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined }
}

const model = () =>
  new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "Hello" },
          { type: "text-delta", id: "t", delta: " there" },
          { type: "text-end", id: "t" },
          { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage }
        ]
      })
    })
  })

const readAll = async <A>(stream: ReadableStream<A>) => {
  const parts: Array<A> = []
  for (const reader = stream.getReader();;) {
    const next = await reader.read()
    if (next.done) return parts
    parts.push(next.value)
  }
}

describe("fullStreamAlone", () => {
  it("gives every part of the answer and leaves no tee branch queuing them", async () => {
    const result = streamText({ model: model(), prompt: "hi" })
    const parts = await readAll(fullStreamAlone(result))
    expect(
      parts.filter((part) => part.type === "text-delta").map((part) => part.type === "text-delta" ? part.text : "")
    ).toEqual(["Hello", " there"])
    expect(parts.at(-1)?.type).toBe("finish")
    expect(await result.text).toBe("Hello there")
    // The branch the SDK keeps for later reads was cancelled: it holds nothing.
    const kept = (result as unknown as { readonly baseStream: ReadableStream<unknown> }).baseStream
    expect(await kept.getReader().read()).toEqual({ done: true, value: undefined })
  })
})
