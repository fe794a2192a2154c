import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/timers.js"

// Issue #32 (review): where a human can be asked, delegate_task's sub-agents run in the SDK's approval
// check, outside its tool execution and its abort. A client that goes away must stop them too: the
// sub-agent's model request (to the fake, on a model that never answers) is closed.

const appFor = (url: string) => {
  const provider = createOpenAICompatible({ name: "fake", baseURL: `${url}/v1`, includeUsage: true })
  const staller = defineAgent({
    id: "staller",
    name: "Staller",
    purpose: "Never answers",
    instructions: "Wait.",
    model: provider.chatModel("stall-sub")
  })
  const boss = defineAgent({
    id: "boss",
    name: "Boss",
    purpose: "Delegates",
    instructions: "You delegate.",
    subAgents: [staller]
  })
  return defineApp({ agents: [boss, staller] })
}

const server = Layer.unwrapEffect(
  Effect.map(
    FakeProvider,
    (fake) => TestServerLive({ app: appFor(fake.url), config: { model: fakeModelSettings(fake) } })
  )
).pipe(Layer.provideMerge(FakeProviderLive))

layer(server, { excludeTestServices: true })("delegate_task under the parent's abort", (it) => {
  for (const route of ["text", "stream"] as const) {
    it.effect(`/${route}: a client that goes away aborts the sub-agent's model request`, () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const fake = yield* FakeProvider
        const asked = () => fake.requests.filter((request) => request.model === "stall-sub").length
        const before = { asked: asked(), closed: fake.closedEarly() }
        const client = new AbortController()
        const call = fetch(`${url}/agents/boss/${route}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input: "delegate \"wait for me\" to staller" }),
          signal: client.signal
        }).then((response) => response.text()).catch(() => "aborted")
        yield* eventually(Effect.sync(asked), (n) => n > before.asked, "the sub-agent's model request")
        client.abort()
        expect(yield* Effect.promise(() => call)).toBe("aborted")
        yield* eventually(
          Effect.sync(() => fake.closedEarly()),
          (n) => n > before.closed,
          "the sub-agent's request closed",
          15_000
        )
      }))
  }
})
