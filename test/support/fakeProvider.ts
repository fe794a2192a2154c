import * as Sse from "@effect/experimental/Sse"
import { Context, Effect, Layer } from "effect"
import { type FakeOpenAI, type FakeOpenAIOptions, startFakeOpenAI } from "../../scripts/fake-openai.js"
import type { ServiceApp } from "../../src/App.js"
import type { ModelSettings } from "../../src/config/ModelSettings.js"
import type { AppRequirementsOf } from "../../src/Service.js"
import { TestServerLive } from "./TestServer.js"

/** The fake OpenAI-compatible server, over real HTTP on a free port. */
export class FakeProvider extends Context.Tag("test/FakeProvider")<FakeProvider, FakeOpenAI>() {}

/** The fake provider started with `options` (for example `strictSchemas`). */
export const FakeProviderWith = (options?: FakeOpenAIOptions) =>
  Layer.scoped(
    FakeProvider,
    Effect.acquireRelease(Effect.promise(() => startFakeOpenAI(options)), (fake) => Effect.promise(() => fake.close()))
  )

export const FakeProviderLive = FakeProviderWith()

export const fakeModelSettings = (fake: FakeOpenAI): ModelSettings => ({
  provider: "openai-compatible",
  model: "fake-model",
  baseUrl: `${fake.url}/v1`
})

/** The service with its agents' model served by the fake provider; both are in the context. */
export const AgentTestServerLive = <R = never>(
  app?: ServiceApp<R>,
  fakeOptions?: FakeOpenAIOptions,
  provide?: Layer.Layer<AppRequirementsOf<R>>
) =>
  Layer.unwrapEffect(
    Effect.map(FakeProvider, (fake) =>
      TestServerLive<R>({
        ...(app ? { app } : {}),
        ...(provide ? { provide } : {}),
        config: { model: fakeModelSettings(fake) }
      }))
  ).pipe(
    Layer.provideMerge(fakeOptions === undefined ? FakeProviderLive : FakeProviderWith(fakeOptions))
  )

export interface SseEvent extends Omit<Sse.Event, "data"> {
  readonly data: any
}

/** The complete events of an SSE body, their data read as JSON (`[DONE]` kept as the string). */
export const parseSse = (body: string): Array<SseEvent> => {
  const events: Array<SseEvent> = []
  Sse.makeParser((event) => {
    if (event._tag === "Event") {
      events.push({ ...event, data: event.data === "[DONE]" ? event.data : JSON.parse(event.data) })
    }
  }).feed(body)
  return events
}

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
