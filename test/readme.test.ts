import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { defineApp } from "../src/App.js"
import { forecaster, greeting, toFahrenheit } from "./fixtures/readme/own-app.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
const lines = readme.split("\n")

/** Lines inside fenced code blocks do not count as Markdown. */
const proseLines = (): Array<{ readonly text: string; readonly line: number }> => {
  const out: Array<{ readonly text: string; readonly line: number }> = []
  let fenced = false
  lines.forEach((text, index) => {
    if (text.startsWith("```")) fenced = !fenced
    else if (!fenced) out.push({ text, line: index + 1 })
  })
  return out
}

/** GitHub's heading anchors: lower case, punctuation but `-` dropped, spaces to `-`. */
const anchorOf = (heading: string) => heading.toLowerCase().replace(/[^\p{L}\p{N}\s-]/gu, "").trim().replace(/\s/g, "-")

describe("README", () => {
  it("every table is one block: a header row, its separator, then rows only", () => {
    const prose = proseLines()
    const broken: Array<string> = []
    prose.forEach(({ line, text }, index) => {
      if (!text.startsWith("|")) return
      const previous = prose[index - 1]?.text ?? ""
      if (previous.startsWith("|")) return
      const separator = prose[index + 1]?.text ?? ""
      if (previous.trim() !== "" && !previous.startsWith("<!--")) {
        broken.push(`line ${line}: a table row right after text`)
      } else if (!/^\|[\s:|-]+\|$/.test(separator.trim())) broken.push(`line ${line}: a table without a separator row`)
    })
    expect(broken).toEqual([])
  })

  it("every link to a heading of the README finds it", () => {
    const anchors = new Set(
      proseLines().flatMap(({ text }) => /^#{1,4} (.+)$/.exec(text)?.slice(1) ?? []).map(anchorOf)
    )
    const links = [...readme.matchAll(/\]\(#([^)]+)\)/g)].map((match) => match[1]!)
    expect(links.length).toBeGreaterThan(5)
    expect(links.filter((link) => !anchors.has(link))).toEqual([])
  })

  it("leads with what it is, the two commands and your own agent and workflow; the reference follows", () => {
    const headings = lines.filter((line) => line.startsWith("## ")).map((line) => line.slice(3))
    expect(headings.slice(0, 3)).toEqual(["Quick start", "Your own agents, tools and workflows", "The API"])
    expect(readme.indexOf("npm ci && npm start")).toBeLessThan(readme.indexOf("## Your own"))
  })

  it("the own-app sample is test/fixtures/readme/own-app.ts below its imports", () => {
    const sample = /<!-- readme: own-app -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    const fixture = readFileSync(new URL("./fixtures/readme/own-app.ts", import.meta.url), "utf8")
    expect(sample).toBeDefined()
    expect(fixture.slice(fixture.indexOf("\n\n") + 2).replace(/^(\/\/|import).*\n/gm, "").replace(/^\n+/, "")).toBe(
      sample
    )
  })

  it("the typed-calls sample is test/fixtures/readme/typed-calls.ts below its marker", () => {
    const sample = /<!-- readme: typed-calls -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
    const fixture = readFileSync(new URL("./fixtures/readme/typed-calls.ts", import.meta.url), "utf8")
    expect(sample).toBeDefined()
    expect(fixture.slice(fixture.indexOf("// README:\n") + "// README:\n".length)).toBe(sample)
  })
})

const ownApp = defineApp({ agents: [forecaster], tools: [toFahrenheit], workflows: [greeting] })

layer(TestServerLive({ app: ownApp }), { excludeTestServices: true })("README: the own-app sample, served", (it) => {
  it.effect("the greeting workflow answers as the README's curl shows", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(`${url}/workflows/greeting/execute`, json({ input: { name: "Ada", loud: true } }))
      expect(run).toMatchObject({
        status: 200,
        body: { success: true, data: { status: "completed", result: { greeting: "HELLO, ADA!" } } }
      })
      expect(readme).toContain(`"status":"completed","result":{"greeting":"HELLO, ADA!"}`)
      const agents = yield* fetchJson(`${url}/agents`)
      expect(agents.body.data.map((agent: { id: string }) => agent.id)).toEqual(["forecaster"])
    }))
})
