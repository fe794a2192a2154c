import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { blocklist, Guardrail, maxInputLength, regexRedactor } from "../src/agents/guardrails/Guardrail.js"
import { defineApp } from "../src/App.js"
import { AgentTestServerLive, FakeProvider, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// The ready-made guardrails' decisions, and a guardrail that breaks: the call fails, nothing gets through.

const call = { context: {}, user: null }

/** The decision of a ready-made guardrail (a plain value, never a Promise or an Effect). */
const tagOf = (decision: unknown) => (decision as { readonly _tag: string })._tag

describe("ready-made guardrails", () => {
  it("maxInputLength blocks past n characters", () => {
    const guardrail = maxInputLength(5)
    expect(guardrail.check({ text: "12345", call })).toEqual(Guardrail.pass)
    expect(guardrail.check({ text: "123456", call })).toEqual(Guardrail.block("The input is longer than 5 characters"))
  })

  it("regexRedactor replaces every match, whatever the pattern's flags, and passes text without one", () => {
    const { input, output } = regexRedactor(/\d+/, "#")
    expect(input.check({ text: "a 1 b 22", call })).toEqual(Guardrail.rewrite("a # b #"))
    expect(output.check({ text: "no digits", final: false, call })).toEqual(Guardrail.pass)
    // A sticky or global pattern given twice gives the same answer (its lastIndex is reset).
    const sticky = regexRedactor(/x/g, "y").output
    expect(sticky.check({ text: "x x", final: true, call })).toEqual(Guardrail.rewrite("y y"))
    expect(sticky.check({ text: "x x", final: true, call })).toEqual(Guardrail.rewrite("y y"))
  })

  it("blocklist matches whole words in any case; while streaming, a word at the end waits for the next character", () => {
    const { input, output } = blocklist(["ass", "c++"])
    expect(tagOf(input.check({ text: "an ASS here", call }))).toBe("block")
    expect(tagOf(input.check({ text: "assign it", call }))).toBe("pass")
    expect(tagOf(output.check({ text: "then we ass", final: false, call }))).toBe("pass")
    expect(tagOf(output.check({ text: "then we ass", final: true, call }))).toBe("block")
    expect(tagOf(output.check({ text: "then we ass.", final: false, call }))).toBe("block")
    expect(tagOf(blocklist([]).input.check({ text: "anything", call }))).toBe("pass")
    expect(tagOf(input.check({ text: "I write C++ daily", call }))).toBe("block")
    const accents = blocklist(["café"]).input
    expect(tagOf(accents.check({ text: "un CAFÉ noir", call }))).toBe("block")
    expect(tagOf(accents.check({ text: "cafés", call }))).toBe("pass")
  })

  it("blocklist and regexRedactor match the normalised text: NFKC, no format characters, case-folded (issue #42)", () => {
    const { input, output } = blocklist(["forbidden", "straße"])
    for (
      const text of [
        "for\u200Bbidden",
        "\uFF26\uFF2F\uFF32\uFF22\uFF29\uFF24\uFF24\uFF25\uFF2E",
        "FOR\u00ADBID\u2060DEN",
        "\u{1D41F}orbidden",
        "STRASSE"
      ]
    ) {
      expect([text, tagOf(input.check({ text: `say ${text} now`, call }))]).toEqual([text, "block"])
    }
    expect(tagOf(output.check({ text: "then we for\u200Dbidden", final: false, call }))).toBe("pass")
    expect(tagOf(output.check({ text: "then we for\u200Dbidden.", final: false, call }))).toBe("block")
    const { input: redact } = regexRedactor(/SECRET-\d+/, "[x]")
    // Only the characters a match came from are replaced; the rest stays as sent (case, accents, width).
    expect(redact.check({ text: "Keep \uFF33\uFF25\uFF23\uFF32\uFF25\uFF34-42 and secret\u200B-7 Café", call }))
      .toEqual(Guardrail.rewrite("Keep [x] and [x] Café"))
    expect(redact.check({ text: "e\u0301 SECRET-1 e\u0301", call })).toEqual(Guardrail.rewrite("e\u0301 [x] e\u0301"))
    expect(redact.check({ text: "nothing here", call })).toEqual(Guardrail.pass)
    // Long text is mapped chunk by chunk: a match next to or across a chunk's edge is replaced all the same.
    const spanning = regexRedactor(/secret code/, "[x]").input
    for (let at = 4080; at < 4110; at++) {
      const before = "é ".repeat(at >> 1).slice(0, at)
      const text = `${before}Secret Code${" Zürich".repeat(900)} SE\u200BCRET code.`
      expect(spanning.check({ text, call })).toEqual(Guardrail.rewrite(`${before}[x]${" Zürich".repeat(900)} [x].`))
    }
  })

  it("names and hold-backs are checked when the guardrail is made", () => {
    expect(() => Guardrail.input({ name: "has space", check: () => Guardrail.pass })).toThrow(/Guardrail name/)
    expect(() => Guardrail.output({ name: "ok", check: () => Guardrail.pass, holdBack: 5000 })).toThrow(/holdBack/)
    expect(Guardrail.output({ name: "ok", check: () => Guardrail.pass }).holdBack).toBe(64)
  })
})

const broken = defineAgent({
  id: "broken",
  name: "Broken",
  purpose: "Guardrails that fail",
  instructions: "hi",
  inputGuardrails: [Guardrail.input({
    name: "throws",
    check: ({ text }) => {
      if (text.includes("boom")) throw new Error("the rule service is down")
      return Guardrail.pass
    }
  })],
  outputGuardrails: [Guardrail.output({
    name: "fails",
    check: ({ text }) => (text.includes("explode") ? Effect.fail("no verdict") : Effect.succeed(Guardrail.pass))
  })]
})

layer(AgentTestServerLive(defineApp({ agents: [broken] })), { excludeTestServices: true })(
  "a guardrail that breaks",
  (it) => {
    it.effect("fails the call (500 naming the guardrail; an error frame in a stream); nothing unchecked is sent", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const fake = yield* FakeProvider
        fake.reset()
        const thrown = yield* fetchJson(`${url}/agents/broken/text`, json({ input: "boom" }))
        expect(thrown.status).toBe(500)
        expect(thrown.body.error).toBe("Guardrail throws failed: the rule service is down")
        expect(fake.requests).toHaveLength(0)
        const failed = yield* fetchJson(`${url}/agents/broken/text`, json({ input: "explode" }))
        expect(failed.status).toBe(500)
        expect(failed.body.error).toBe("Guardrail fails failed: no verdict")
        const streamed = yield* postSse(`${url}/agents/broken/stream`, { input: "explode" })
        expect(streamed.events.filter((event) => event.data.type === "text-delta")).toEqual([])
        expect(streamed.events.at(-1)!.data).toEqual({ type: "error", error: "Guardrail fails failed: no verdict" })
        const history = yield* fetchJson(`${url}/agents/broken/history?limit=10`)
        expect(history.body.data.entries.map((entry: { status: string }) => entry.status)).toEqual(["error", "error"])
      }))
  }
)
