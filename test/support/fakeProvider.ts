import { Context, Effect, Layer } from "effect"
import type { ModelSettings } from "../../src/config/ModelSettings.js"
import type { ServiceApp } from "../../src/App.js"
import { type FakeOpenAI, startFakeOpenAI } from "../../scripts/fake-openai.js"
import { TestServerLive } from "./TestServer.js"

/** The fake OpenAI-compatible server, over real HTTP on a free port. */
export class FakeProvider extends Context.Tag("test/FakeProvider")<FakeProvider, FakeOpenAI>() {}

export const FakeProviderLive = Layer.scoped(
  FakeProvider,
  Effect.acquireRelease(Effect.promise(() => startFakeOpenAI()), (fake) => Effect.promise(() => fake.close()))
)

export const fakeModelSettings = (fake: FakeOpenAI): ModelSettings => ({
  provider: "openai-compatible",
  model: "fake-model",
  baseUrl: `${fake.url}/v1`
})

/** The service with its agents' model served by the fake provider; both are in the context. */
export const AgentTestServerLive = (app?: ServiceApp) =>
  Layer.unwrapEffect(Effect.map(FakeProvider, (fake) =>
    TestServerLive({ ...(app ? { app } : {}), config: { model: fakeModelSettings(fake) } }))).pipe(
      Layer.provideMerge(FakeProviderLive)
    )

export interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data: any
}

/** Parses a complete SSE body (comments skipped; `[DONE]` kept as the string). */
export const parseSse = (body: string): Array<SseEvent> =>
  body.split("\n\n").filter((block) => block.trim() !== "").flatMap((block) => {
    const event: { id?: string; event?: string; data?: string } = {}
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue
      const [field, ...rest] = line.split(":")
      const value = rest.join(":").replace(/^ /, "")
      if (field === "data") event.data = event.data === undefined ? value : `${event.data}\n${value}`
      else if (field === "id") event.id = value
      else if (field === "event") event.event = value
    }
    if (event.data === undefined) return []
    return [{ ...event, data: event.data === "[DONE]" ? "[DONE]" : JSON.parse(event.data) }]
  })

export const postSse = (url: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, events: response.ok ? parseSse(text) : [] }
  })
