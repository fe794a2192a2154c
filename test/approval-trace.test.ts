import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { approvalApp, refunds } from "./support/approvalApp.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { type OtlpReceived, otlpReceiver } from "./support/otlpReceiver.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/timers.js"

// Issue #32 settled 12: the follow-up call's span links to the span of the call that asked for approval.
class Otlp extends Context.Tag("test/ApprovalOtlp")<Otlp, OtlpReceived>() {}

const Served = Layer.unwrapScoped(Effect.gen(function*() {
  const received = yield* otlpReceiver
  const fake = yield* FakeProvider
  return Layer.merge(
    TestServerLive({ app: approvalApp, config: { model: fakeModelSettings(fake), otlpEndpoint: received.url } }),
    Layer.succeed(Otlp, received)
  )
})).pipe(Layer.provideMerge(FakeProviderLive))

const spansOf = (bodies: ReadonlyArray<any>): Array<any> =>
  bodies.flatMap((body) =>
    (body.resourceSpans ?? []).flatMap((resource: any) =>
      (resource.scopeSpans ?? []).flatMap((scope: any) => scope.spans ?? [])
    )
  )

const withEvent = (otlp: OtlpReceived, event: string, approvalId: string) =>
  spansOf(otlp.traces).find((span) =>
    (span.events ?? []).some((e: any) =>
      e.name === event &&
      e.attributes.some((a: any) => a.key === "gen_ai.tool.approval.id" && a.value.stringValue === approvalId)
    )
  )

layer(Served, { excludeTestServices: true })("tool approval in OTLP", (it) => {
  it.effect("the answering call's span links to the requesting call's span", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const otlp = yield* Otlp
      const before = refunds.length
      const first = yield* fetchJson(`${url}/agents/cashier/text`, json({ input: "refund 17" }))
      const { approvalId } = first.body.data.pendingApprovals[0]
      const answer = yield* fetchJson(
        `${url}/agents/cashier/text`,
        json({ options: { approvals: [{ approvalId, approved: true }] } })
      )
      expect(answer.status).toBe(200)
      expect(refunds.slice(before)).toEqual([17])
      const requested = yield* eventually(
        Effect.sync(() => withEvent(otlp, "gen_ai.tool.approval.requested", approvalId)),
        (span) => span !== undefined,
        "the requesting span exported"
      )
      const answered = yield* eventually(
        Effect.sync(() => withEvent(otlp, "gen_ai.tool.approval.answered", approvalId)),
        (span) => span !== undefined,
        "the answering span exported"
      )
      expect(requested.name).toBe("AgentRegistry.text")
      expect(answered.name).toBe("AgentRegistry.text")
      expect(answered.traceId).not.toBe(requested.traceId)
      expect(answered.links).toEqual([
        expect.objectContaining({ traceId: requested.traceId, spanId: requested.spanId })
      ])
    }), 40_000)
})
