import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Schema, Scope } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import type { ServerConfigShape } from "../src/config/ServerConfig.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import type { ResumeData } from "../src/workflows/engine/TypedCalls.js"
import { cashier, refunds } from "./support/approvalApp.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive, postSse } from "./support/fakeProvider.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #32 item 1 (settled 5): an andAgent step whose agent asks for a tool approval suspends the
// execution with the request; the resume answers it and continues the stored generation.

const refundFlow = workflow({
  id: "refund-flow",
  name: "Refund",
  purpose: "Asks the cashier to refund an amount",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.String
}).andAgent({ id: "ask-cashier", agent: cashier, prompt: ({ data }) => `refund ${data.amount}` })

// Settled 4: an agent whose sub-agent asks suspends the execution with the sub-agent's request.
const desk = defineAgent({
  id: "desk",
  name: "Desk",
  purpose: "Hands tasks to the cashier",
  instructions: "You delegate.",
  subAgents: [cashier]
})
const deskFlow = workflow({
  id: "desk-flow",
  name: "Desk refund",
  purpose: "Asks the desk, which delegates to the cashier",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.String
}).andAgent({ id: "ask-desk", agent: desk, prompt: ({ data }) => `delegate "refund ${data.amount}" to cashier` })

// An andAgent inside a child workflow suspends the parent execution; its resume is checked the same way.
const outerFlow = workflow({
  id: "outer-refund",
  name: "Outer refund",
  purpose: "Runs the refund flow as a child",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.String
}).andWorkflow({ id: "child", workflow: refundFlow, input: ({ data }) => data })

const app = defineApp({ workflows: [refundFlow, deskFlow, outerFlow] })

// Compile time: `resumeWorkflow` at an andAgent step takes the step's resume type or the approval answers.
const _typedFlow = workflow({
  id: "typed-refund",
  name: "Typed refund",
  purpose: "Has its own resume type",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.String,
  resumeSchema: Schema.Struct({ ok: Schema.Boolean })
}).andAgent({ id: "ask-cashier", agent: cashier, prompt: ({ data }) => `refund ${data.amount}` })
type AgentResume = ResumeData<typeof _typedFlow, "ask-cashier">
export const typedAnswers: ReadonlyArray<AgentResume> = [
  { answers: [{ approvalId: "a", approved: true }, { approvalId: "b", approved: false, reason: "no" }] },
  { ok: true },
  // @ts-expect-error neither the step's resume data nor approval answers
  { answers: "yes" }
]

const ServerWith = (config: Partial<ServerConfigShape>) =>
  Layer.unwrapEffect(
    Effect.map(FakeProvider, (fake) => TestServerLive({ app, config: { model: fakeModelSettings(fake), ...config } }))
  ).pipe(Layer.provideMerge(FakeProviderLive))

const execute = (url: string, amount: number) =>
  fetchJson(`${url}/workflows/refund-flow/execute`, json({ input: { amount } }))
const resume = (url: string, executionId: string, resumeData: unknown) =>
  fetchJson(`${url}/workflows/refund-flow/executions/${executionId}/resume`, json({ resumeData }))
const stateOf = (url: string, executionId: string) =>
  Effect.map(fetchJson(`${url}/workflows/refund-flow/executions/${executionId}/state`), (answer) => answer.body.data)

/** Polls the execution's state until `done` holds (a generous deadline, no fixed sleep). */
const waitFor = (url: string, executionId: string, done: (state: any) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    while (true) {
      const state = yield* stateOf(url, executionId)
      if (done(state)) return state
      if (Date.now() > deadline) throw new Error(`execution ${executionId} never got there: ${JSON.stringify(state)}`)
      yield* Effect.sleep("50 millis")
    }
  })

/** The model requests that carried this prompt. */
const requestsFor = (fake: FakeProvider["Type"], amount: number) =>
  fake.requests.filter((request) =>
    request.messages.some((message) =>
      message.role === "user" && JSON.stringify(message.content).includes(`refund ${amount}`)
    )
  )

const suspendedOn = (body: any, amount: number) => {
  expect(body.data).toMatchObject({
    status: "suspended",
    suspension: {
      reason: "tool-approval",
      data: {
        approvals: [{
          approvalId: expect.any(String),
          toolName: "refund",
          toolCallId: expect.any(String),
          input: { amount },
          expiresAt: expect.any(String)
        }]
      }
    }
  })
  expect(body.data.suspension.data.approvals).toHaveLength(1)
  return body.data as { executionId: string; suspension: { data: { approvals: Array<{ approvalId: string }> } } }
}

layer(ServerWith({}), { excludeTestServices: true })("andAgent tool approval", (it) => {
  it.effect("suspends with the request, checks the answers, and continues the stored generation without prompting again", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fake = yield* FakeProvider
      const run = suspendedOn((yield* execute(url, 70)).body, 70)
      const [pending] = run.suspension.data.approvals
      expect(requestsFor(fake, 70)).toHaveLength(1)
      expect(refunds).not.toContain(70)
      const state = yield* stateOf(url, run.executionId)
      expect(state).toMatchObject({
        status: "suspended",
        suspension: { stepId: "ask-cashier", data: { approvals: [{ approvalId: pending.approvalId }] } }
      })
      const listing = yield* fetchJson(`${url}/workflows/executions?workflowId=refund-flow&status=suspended`)
      const listed = (listing.body.data as Array<any>).find((one) => one.id === run.executionId)
      expect(listed.status).toBe("suspended")
      // The listing shows it as any suspension (its data is in the state and the stream's event).
      expect(listed.events.at(-1)).toMatchObject({ type: "workflow-suspended", from: "ask-cashier" })

      // Bad answers are 400s that leave it suspended.
      for (
        const [bad, message] of [
          [undefined, "resumeData"],
          [{ answers: [] }, "answers"],
          [{ answers: [{ approvalId: "nope", approved: true }] }, "approval nope is not one this execution waits on"],
          [{
            answers: [{ approvalId: pending.approvalId, approved: true }, {
              approvalId: pending.approvalId,
              approved: true
            }]
          }, "must name each approval once"],
          [{ answers: [{ approvalId: pending.approvalId, approved: true }], expired: true }, "expired"]
        ] as const
      ) {
        const refused = yield* resume(url, run.executionId, bad)
        expect(refused.status).toBe(400)
        expect(refused.body.error).toContain(message)
      }
      expect((yield* stateOf(url, run.executionId)).status).toBe("suspended")

      // The agent's own follow-up route cannot answer a workflow's approval: it is the execution's.
      const bypass = yield* fetchJson(
        `${url}/agents/cashier/text`,
        json({ options: { approvals: [{ approvalId: pending.approvalId, approved: true }] } })
      )
      expect(bypass).toMatchObject({ status: 404, body: { error: `Approval ${pending.approvalId} not found` } })
      expect(refunds).not.toContain(70)

      const resumed = yield* resume(url, run.executionId, {
        answers: [{ approvalId: pending.approvalId, approved: true }]
      })
      expect(resumed.status).toBe(200)
      expect(resumed.body.data).toMatchObject({ status: "completed", result: expect.stringContaining("refunded") })
      expect(refunds.filter((one) => one === 70)).toEqual([70])
      // One more model request, continuing the stored messages: the prompt once, then the tool's result.
      const asked = requestsFor(fake, 70)
      expect(asked).toHaveLength(2)
      const last = asked[1].messages
      expect(last.filter((message) => message.role === "user")).toHaveLength(1)
      expect(last.at(-1)?.role).toBe("tool")

      // Answered once: the execution is no longer suspended.
      expect(
        (yield* resume(url, run.executionId, { answers: [{ approvalId: pending.approvalId, approved: true }] })).status
      ).toBe(404)
    }))

  it.effect("a sub-agent's request suspends the execution; the resume continues the sub-agent, then the parent", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const started = yield* fetchJson(`${url}/workflows/desk-flow/execute`, json({ input: { amount: 73 } }))
      expect(started.body.data).toMatchObject({
        status: "suspended",
        suspension: {
          reason: "tool-approval",
          data: { approvals: [{ toolName: "refund", input: { amount: 73 }, agentId: "cashier" }] }
        }
      })
      expect(refunds).not.toContain(73)
      const [pending] = started.body.data.suspension.data.approvals
      const resumed = yield* fetchJson(
        `${url}/workflows/desk-flow/executions/${started.body.data.executionId}/resume`,
        json({ resumeData: { answers: [{ approvalId: pending.approvalId, approved: true }] } })
      )
      expect(resumed.status).toBe(200)
      expect(resumed.body.data.status).toBe("completed")
      expect(refunds.filter((one) => one === 73)).toEqual([73])
    }))

  it.effect("an andAgent inside a child workflow: the resume data is checked against its approvals, then continues it", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const started = yield* fetchJson(`${url}/workflows/outer-refund/execute`, json({ input: { amount: 74 } }))
      expect(started.body.data).toMatchObject({
        status: "suspended",
        suspension: { reason: "tool-approval", data: { approvals: [{ toolName: "refund", input: { amount: 74 } }] } }
      })
      const executionId = started.body.data.executionId
      const [pending] = started.body.data.suspension.data.approvals
      const resumeWith = (resumeData: unknown) =>
        fetchJson(`${url}/workflows/outer-refund/executions/${executionId}/resume`, json({ resumeData }))
      for (const bad of [{ ok: true }, { answers: [{ approvalId: "nope", approved: true }] }]) {
        const refused = yield* resumeWith(bad)
        expect(refused.status).toBe(400)
      }
      expect((yield* fetchJson(`${url}/workflows/outer-refund/executions/${executionId}/state`)).body.data.status).toBe(
        "suspended"
      )
      expect(refunds).not.toContain(74)
      const resumed = yield* resumeWith({ answers: [{ approvalId: pending.approvalId, approved: true }] })
      expect(resumed.status).toBe(200)
      expect(resumed.body.data.status).toBe("completed")
      expect(refunds.filter((one) => one === 74)).toEqual([74])
    }))

  it.effect("a denial is reported to the model, and the tool never runs", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = suspendedOn((yield* execute(url, 71)).body, 71)
      const [pending] = run.suspension.data.approvals
      const resumed = yield* resume(url, run.executionId, {
        answers: [{ approvalId: pending.approvalId, approved: false, reason: "over budget" }]
      })
      expect(resumed.body.data).toMatchObject({ status: "completed", result: expect.stringContaining("over budget") })
      expect(refunds).not.toContain(71)
    }))

  it.effect("the stream's suspend event carries the approvals", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const streamed = yield* postSse(`${url}/workflows/refund-flow/stream`, { input: { amount: 72 } })
      const suspended = streamed.events.find((event) => event.data.type === "workflow-suspended")
      expect(suspended?.data).toMatchObject({
        from: "ask-cashier",
        data: { approvals: [{ toolName: "refund", input: { amount: 72 } }] }
      })
    }))
})

layer(ServerWith({ approvals: { ttlMs: 1_500 } }), { excludeTestServices: true })(
  "andAgent tool approval expiry",
  (it) => {
    it.effect(
      "an approval that expires while the execution waits is denied as expired through the due work",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const run = suspendedOn((yield* execute(url, 80)).body, 80)
          const done = yield* waitFor(
            url,
            run.executionId,
            (state) => state.status !== "suspended" && state.status !== "running"
          )
          expect(done).toMatchObject({ status: "completed", result: expect.stringContaining("expired") })
          expect(refunds).not.toContain(80)
          const asked = requestsFor(fake, 80)
          expect(asked).toHaveLength(2)
          expect(JSON.stringify(asked[1].messages.at(-1))).toContain("expired")
          // A late answer finds it resumed already.
          const late = yield* resume(url, run.executionId, {
            answers: [{ approvalId: run.suspension.data.approvals[0].approvalId, approved: true }]
          })
          expect(late.status).toBe(404)
        }),
      40_000
    )
  }
)

layer(ServerWith({ approvals: { ttlMs: 400 } }), { excludeTestServices: true })(
  "andAgent tool approval: answer racing expiry",
  (it) => {
    it.effect(
      "20 trials of an approval answered around its expiry: the execution completes, approved or denied as expired, never both",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          for (let trial = 0; trial < 20; trial++) {
            const amount = 1000 + trial
            const run = suspendedOn((yield* execute(url, amount)).body, amount)
            const [pending] = run.suspension.data.approvals as unknown as Array<
              { approvalId: string; expiresAt: string }
            >
            // From 100 ms before its expiry to 100 ms after it: the race is the point, not a wait for a state.
            yield* Effect.sleep(Math.max(0, Date.parse(pending.expiresAt) - Date.now() - 100 + trial * 10))
            const answered = yield* resume(url, run.executionId, {
              answers: [{ approvalId: pending.approvalId, approved: true }]
            })
            expect([200, 404, 409]).toContain(answered.status)
            const done = yield* waitFor(
              url,
              run.executionId,
              (state) => state.status !== "suspended" && state.status !== "running"
            )
            expect(done.status).toBe("completed")
            const ran = refunds.filter((one) => one === amount).length
            expect(ran).toBe(done.result.includes("expired") ? 0 : 1)
            if (answered.status !== 200) expect(done.result).toContain("expired")
          }
        }),
      120_000
    )
  }
)

const SECRET = "a-long-shared-secret-for-workflow-approval-tests"
const token = (sub: string) =>
  new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
    new TextEncoder().encode(SECRET)
  )
const asUser = (jwt: string, body: unknown): RequestInit => ({
  ...json(body),
  headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` }
})

layer(
  ServerWith({
    auth: { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: true, publicRoutes: [] } }
  }),
  { excludeTestServices: true }
)("andAgent tool approval under JWT", (it) => {
  it.effect("the resume is the execution owner's: another user's is 404 and leaves it suspended", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const [ada, bob] = yield* Effect.promise(() => Promise.all([token("ada"), token("bob")]))
      const started = yield* fetchJson(`${url}/workflows/refund-flow/execute`, asUser(ada, { input: { amount: 75 } }))
      const run = suspendedOn(started.body, 75)
      const answer = {
        resumeData: { answers: [{ approvalId: run.suspension.data.approvals[0].approvalId, approved: true }] }
      }
      const path = `${url}/workflows/refund-flow/executions/${run.executionId}/resume`
      expect((yield* fetchJson(path, asUser(bob, answer))).status).toBe(404)
      expect(refunds).not.toContain(75)
      const own = yield* fetchJson(path, asUser(ada, answer))
      expect(own.body.data).toMatchObject({ status: "completed", result: expect.stringContaining("refunded") })
      expect(refunds.filter((one) => one === 75)).toEqual([75])
    }))
})

/** A service instance on `databaseUrl`, up until its scope is closed. */
const instance = (databaseUrl: string, instanceId: string, config: Partial<ServerConfigShape> = {}) =>
  Effect.gen(function*() {
    const fake = yield* FakeProvider
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      TestServerLive({
        app,
        config: { model: fakeModelSettings(fake), databaseUrl: Redacted.make(databaseUrl), instanceId, ...config }
      }),
      scope
    )
    return { url: Context.get(context, TestServer).url, close: Scope.close(scope, Exit.void) }
  })

const restartScenario = (databaseUrl: string, amount: number) =>
  Effect.gen(function*() {
    const fake = yield* FakeProvider
    const a = yield* instance(databaseUrl, "a")
    const run = suspendedOn((yield* execute(a.url, amount)).body, amount)
    yield* a.close
    const b = yield* instance(databaseUrl, "b")
    const resumed = yield* resume(b.url, run.executionId, {
      answers: [{ approvalId: run.suspension.data.approvals[0].approvalId, approved: true }]
    })
    expect(resumed.body.data).toMatchObject({ status: "completed", result: expect.stringContaining("refunded") })
    yield* b.close
    expect(refunds.filter((one) => one === amount)).toEqual([amount])
    expect(requestsFor(fake, amount)).toHaveLength(2)
  })

describe("andAgent tool approval across a restart", () => {
  it.scoped("on SQLite: suspended on A, A shut down, resumed on B", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      yield* restartScenario(`file:${join(dir, "service.db")}`, 90)
    }).pipe(Effect.provide(FakeProviderLive)), 60_000)

  it.scoped.skipIf(!postgresAvailable)(
    "on Postgres: suspended on A, A shut down, resumed on B",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        yield* restartScenario(url, 91)
      }).pipe(Effect.provide(FakeProviderLive)),
    60_000
  )

  it.scoped.skipIf(!postgresAvailable)(
    "on Postgres: suspended on A, A shut down, the approval expires and B denies it",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        const a = yield* instance(url, "a", { approvals: { ttlMs: 1_500 } })
        const run = suspendedOn((yield* execute(a.url, 92)).body, 92)
        yield* a.close
        const b = yield* instance(url, "b", { approvals: { ttlMs: 1_500 } })
        const done = yield* waitFor(
          b.url,
          run.executionId,
          (state) => state.status !== "suspended" && state.status !== "running"
        )
        expect(done).toMatchObject({ status: "completed", result: expect.stringContaining("expired") })
        yield* b.close
        expect(refunds).not.toContain(92)
      }).pipe(Effect.provide(FakeProviderLive)),
    60_000
  )
})
