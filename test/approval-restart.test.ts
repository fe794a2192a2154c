import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { join } from "node:path"
import { approvalApp, refunds } from "./support/approvalApp.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #32 (settled 2, 11): a pending approval lives in SQL only. Instance A takes the request and is
 * shut down; instance B, built afresh on the same database (nothing of A's memory), answers it and the
 * call goes on; on Postgres a third instance, running beside B, answers another.
 */

/** A service instance on `databaseUrl`, up until its scope is closed. */
const instance = (databaseUrl: string, instanceId: string) =>
  Effect.gen(function*() {
    const fake = yield* FakeProvider
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      TestServerLive({
        app: approvalApp,
        config: { model: fakeModelSettings(fake), databaseUrl: Redacted.make(databaseUrl), instanceId }
      }),
      scope
    )
    return { url: Context.get(context, TestServer).url, close: Scope.close(scope, Exit.void) }
  })

const ask = (url: string, amount: number) =>
  Effect.map(
    fetchJson(
      `${url}/agents/cashier/text`,
      json({ input: `refund ${amount}`, options: { conversationId: `restart-${amount}` } })
    ),
    (answer) => {
      expect(answer.status).toBe(200)
      return answer.body.data.pendingApprovals[0].approvalId as string
    }
  )

const approve = (url: string, approvalId: string) =>
  fetchJson(`${url}/agents/cashier/text`, json({ options: { approvals: [{ approvalId, approved: true }] } }))

const restartScenario = (databaseUrl: string, amount: number, alongside: boolean) =>
  Effect.gen(function*() {
    const a = yield* instance(databaseUrl, "a")
    const approvalId = yield* ask(a.url, amount)
    const second = alongside ? yield* ask(a.url, amount + 1) : undefined
    yield* a.close
    expect(refunds.filter((one) => one >= amount && one <= amount + 1)).toEqual([])

    const b = yield* instance(databaseUrl, "b")
    const answered = yield* approve(b.url, approvalId)
    expect(answered.status).toBe(200)
    expect(answered.body.data.text).toContain("refunded")
    const history = yield* fetchJson(`${b.url}/agents/cashier/history?conversationId=restart-${amount}`)
    expect(history.body.data.entries).toMatchObject([{ input: `refund ${amount}`, status: "completed" }])

    if (second !== undefined) {
      // A third instance, beside B, answers the other request; B then sees it answered.
      const c = yield* instance(databaseUrl, "c")
      expect((yield* approve(c.url, second)).status).toBe(200)
      expect((yield* approve(b.url, second)).status).toBe(409)
      yield* c.close
    }
    yield* b.close
    expect(refunds.filter((one) => one >= amount && one <= amount + 1)).toEqual(
      second === undefined ? [amount] : [amount, amount + 1]
    )
  })

describe("approval across a restart", () => {
  it.scoped("on SQLite: requested on A, A shut down, answered on B", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* restartScenario(`file:${join(dir, "service.db")}`, 300, false)
    }).pipe(Effect.provide(FakeProviderLive)), 60_000)

  it.scoped.skipIf(!postgresAvailable)(
    "on Postgres: requested on A, A shut down, answered on B and on C beside it",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        yield* restartScenario(url, 400, true)
      }).pipe(Effect.provide(FakeProviderLive)),
    60_000
  )
})
