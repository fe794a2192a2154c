import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { approvalApp, refunds } from "./support/approvalApp.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #32 (settled 1): an approval is answered once. Two answers sent at once, 200 times: exactly one
// continues the call (the tool runs once), the other is 409.

const TRIALS = 200

const onFake = (make: (model: ReturnType<typeof fakeModelSettings>) => Layer.Layer<TestServer, unknown>) =>
  Layer.unwrapEffect(Effect.map(FakeProvider, (fake) => make(fakeModelSettings(fake)))).pipe(
    Layer.provideMerge(FakeProviderLive)
  )

const races = (base: number) => (it: Vitest.MethodsNonLive<TestServer | FakeProvider, true>) => {
  it.effect(
    `two concurrent answers to one approval: one wins, one is 409, the tool runs once (${TRIALS} trials)`,
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const outcomes = yield* Effect.forEach(Array.from({ length: TRIALS }, (_, i) => base + i), (amount) =>
          Effect.gen(function*() {
            const first = yield* fetchJson(`${url}/agents/cashier/text`, json({ input: `refund ${amount}` }))
            const [pending] = first.body.data.pendingApprovals
            const answer = json({
              options: { approvals: [{ approvalId: pending.approvalId, approved: amount % 2 === 0 }] }
            })
            const both = yield* Effect.all([
              fetchJson(`${url}/agents/cashier/text`, answer),
              fetchJson(`${url}/agents/cashier/text`, answer)
            ], {
              concurrency: 2
            })
            return {
              amount,
              statuses: both.map((one) =>
                one.status
              ).sort(),
              errors: both.filter((one) => one.status !== 200).map((one) => one.body.error)
            }
          }), { concurrency: 10 })
        for (const { amount, errors, statuses } of outcomes) {
          expect({ amount, statuses }).toEqual({ amount, statuses: [200, 409] })
          expect(errors[0]).toMatch(/was answered already$/)
          expect(refunds.filter((one) =>
            one === amount
          )).toHaveLength(amount % 2 === 0 ? 1 : 0)
        }
      }),
    120_000
  )
}

layer(onFake((model) => TestServerLive({ app: approvalApp, config: { model } })), { excludeTestServices: true })(
  "approval races on SQLite",
  races(10_000)
)

describe.skipIf(!postgresAvailable)("on Postgres", () => {
  layer(onFake((model) => PostgresTestServerLive({ app: approvalApp, config: { model } })), {
    excludeTestServices: true
  })(
    "approval races on Postgres",
    races(20_000)
  )
})
