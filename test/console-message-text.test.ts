import { describe, expect, it } from "@effect/vitest"
import { messageText } from "../src/console/app/messageText.js"

// The History tab's Input column (the Chromium test covers the console's own UI messages).
describe("the console's text of an agent call's input", () => {
  it("is a string as is, and the last user message's text parts for UI or model messages", () => {
    expect(messageText("hello")).toBe("hello")
    expect(messageText([
      { role: "user", parts: [{ type: "text", text: "first" }] },
      { role: "assistant", parts: [{ type: "text", text: "answer" }] },
      {
        role: "user",
        parts: [{ type: "step-start" }, { type: "text", text: "Paris" }, { type: "text", text: "weather?" }]
      }
    ])).toBe("Paris weather?")
    expect(messageText([{ role: "user", content: "as a model message" }])).toBe("as a model message")
    expect(
      messageText([{ role: "user", content: [{ type: "image", image: "…" }, { type: "text", text: "and this" }] }])
    ).toBe("and this")
  })

  it("falls back to any message's text, then to the JSON", () => {
    expect(messageText([{ role: "assistant", content: "only an assistant" }])).toBe("only an assistant")
    const files = [{ role: "user", parts: [{ type: "file", url: "data:," }] }]
    expect(messageText(files)).toBe(JSON.stringify(files))
    expect(messageText({ odd: true })).toBe(JSON.stringify({ odd: true }))
  })
})
