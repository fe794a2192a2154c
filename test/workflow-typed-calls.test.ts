import { describe, expect, expectTypeOf, it, layer } from "@effect/vitest"
import { Context, Effect, Either, Layer, Logger, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { ServicesLive } from "../src/Service.js"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"
import type { ResumeData, ResumeStepId, WorkflowInput, WorkflowResult } from "../src/workflows/engine/TypedCalls.js"
import { WorkflowEngine } from "../src/workflows/engine/WorkflowEngine.js"
import * as readme from "./fixtures/readme/typed-calls.js"
import { fetchJson, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #30 item 6 (settled 9): `executeWorkflow`, `runWorkflow` and `resumeWorkflow` take the
 * workflow by reference, its input and resume data as their schemas' types (encoded for the validated
 * path) and answer its result decoded by `result`; and who sees an execution started from code.
 */

const Due = Schema.Struct({ greeting: Schema.String, due: Schema.Date })

const stamp = workflow({
  id: "stamp",
  name: "Stamp",
  purpose: "Greets and gives a due date a day after `at`",
  input: Schema.Struct({ name: Schema.String, at: Schema.Date }),
  result: Due
}).andThen({
  id: "greet",
  outputSchema: Due,
  execute: ({ input }) => ({ greeting: `Hello, ${input.name}`, due: new Date(input.at.getTime() + 86_400_000) })
})

// (Resume data of a type unlike its JSON, a Date, reaches the step as such once stored encoded: issue #30 settled 2.)
const Decision = Schema.Struct({
  approved: Schema.Boolean,
  on: Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/))
})

const approval = workflow({
  id: "typed-approval",
  name: "Typed approval",
  purpose: "Asks for a decision on amounts over 100",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.Struct({ approved: Schema.Boolean, amount: Schema.Number, decidedOn: Schema.String })
})
  .andThen({ id: "check", execute: ({ data }) => ({ amount: data.amount, ask: data.amount > 100 }) })
  .andThen({
    id: "ask",
    resumeSchema: Decision,
    execute: ({ data, resumeData, suspend }) => {
      if (!data.ask) return { approved: true, amount: data.amount, decidedOn: "auto" }
      if (resumeData === undefined) return suspend("a manager must decide")
      return { approved: resumeData.approved, amount: data.amount, decidedOn: resumeData.on }
    }
  })

/** Never registered; and another definition under a registered id. */
const stranger = workflow({
  id: "stranger",
  name: "Stranger",
  purpose: "not in the app",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "x", execute: () => 1 })
const impostor = workflow({
  id: "stamp",
  name: "Stamp",
  purpose: "same id, another object",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "x", execute: () => 1 })

const app = defineApp({ workflows: [stamp, approval] })

const servicesOnSqlite = (served: typeof app) =>
  Layer.unwrapScoped(
    Effect.map(tempDir, (dir) =>
      ServicesLive(served, {
        ...resolveServerConfig({}, {}),
        port: 0,
        databaseUrl: Redacted.make(`file:${join(dir, "typed.db")}`)
      }).pipe(
        Layer.provide(Logger.remove(Logger.defaultLogger))
      ))
  )

layer(servicesOnSqlite(app), { timeout: 60_000 })("typed calls on the WorkflowEngine", (it) => {
  it.effect("executeWorkflow: typed input encoded through the validated path, result decoded (a Date)", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const at = new Date("2025-03-01T10:00:00.000Z")
      const outcome = yield* engine.executeWorkflow(stamp, { name: "Ada", at })
      if (outcome.status !== "completed") return expect.fail(`not completed: ${outcome.status}`)
      expect(outcome.result.due).toBeInstanceOf(Date)
      expect(outcome.result).toEqual({ greeting: "Hello, Ada", due: new Date("2025-03-02T10:00:00.000Z") })
      // Stored (and answered by id, as HTTP does) encoded: the ISO string.
      const state = yield* engine.state("stamp", outcome.executionId)
      expect(state.result).toEqual({ greeting: "Hello, Ada", due: "2025-03-02T10:00:00.000Z" })
      expect(state.input).toEqual({ name: "Ada", at: "2025-03-01T10:00:00.000Z" })
    }))

  it.effect("executeWorkflow: input its schema refuses is a ValidationError naming the field; options reach the steps", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const refused = yield* Effect.flip(engine.executeWorkflow(stamp, { name: "Ada", at: new Date("not a date") }))
      expect(refused._tag).toBe("ValidationError")
      expect(refused.message).toContain("input.at")
      const chosen = `typed-${crypto.randomUUID()}`
      const outcome = yield* engine.executeWorkflow(stamp, { name: "Bo", at: new Date(0) }, {
        executionId: chosen,
        context: { tenant: "t1" }
      })
      expect(outcome.executionId).toBe(chosen)
      expect((yield* engine.state("stamp", chosen)).context).toEqual({ tenant: "t1" })
    }))

  it.effect("runWorkflow starts in the background; its state settles with the result", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const started = yield* engine.runWorkflow(stamp, { name: "Cy", at: new Date("2025-01-01T00:00:00.000Z") })
      expect(started).toMatchObject({ workflowId: "stamp", status: "running" })
      // Polled every 20 ms (real time: it.effect's clock is a TestClock), for up to 30 s.
      const deadline = Date.now() + 30_000
      let settled = yield* engine.state("stamp", started.executionId)
      while (settled.status === "running" && Date.now() < deadline) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        settled = yield* engine.state("stamp", started.executionId)
      }
      expect(settled).toMatchObject({
        status: "completed",
        result: { greeting: "Hello, Cy", due: "2025-01-02T00:00:00.000Z" }
      })
    }))

  it.effect("resumeWorkflow: typed data at the named step, or at the step it is parked at", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const asked = yield* engine.executeWorkflow(approval, { amount: 250 })
      expect(asked).toMatchObject({
        status: "suspended",
        suspension: { reason: "a manager must decide", suspendedStepIndex: 1 }
      })
      const resumed = yield* engine.resumeWorkflow({
        workflow: approval,
        executionId: asked.executionId,
        stepId: "ask",
        data: { approved: true, on: "2025-04-05" }
      })
      if (resumed.status !== "completed") return expect.fail(`not completed: ${resumed.status}`)
      expect(resumed.result).toEqual({ approved: true, amount: 250, decidedOn: "2025-04-05" })

      // No stepId: the data is checked against the schema of the step it is parked at.
      const again = yield* engine.executeWorkflow(approval, { amount: 500 })
      const second = yield* engine.resumeWorkflow({
        workflow: approval,
        executionId: again.executionId,
        data: { approved: false, on: "2025-06-07" }
      })
      expect(second).toMatchObject({
        status: "completed",
        result: { approved: false, amount: 500, decidedOn: "2025-06-07" }
      })
    }))

  it.effect("resumeWorkflow: data its schema refuses is a ValidationError; the execution stays suspended", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const asked = yield* engine.executeWorkflow(approval, { amount: 300 })
      const notADay = yield* Effect.flip(engine.resumeWorkflow({
        workflow: approval,
        executionId: asked.executionId,
        stepId: "ask",
        data: { approved: true, on: "yesterday" }
      }))
      expect(notADay).toMatchObject({ _tag: "ValidationError" })
      expect(notADay.message).toContain("data.on")
      // Without a stepId the type is every step's (`check` has no resumeSchema: unknown); the engine still checks.
      const wrongShape = yield* Effect.flip(
        engine.resumeWorkflow({ workflow: approval, executionId: asked.executionId, data: { approved: "yes" } })
      )
      expect(wrongShape).toMatchObject({ _tag: "ValidationError" })
      expect(wrongShape.message).toContain("data.approved")
      expect((yield* engine.state("typed-approval", asked.executionId)).status).toBe("suspended")
    }))

  it.effect("a workflow that is not the registered one is a WorkflowNotRegistered, for every typed call", () =>
    Effect.gen(function*() {
      const engine = yield* WorkflowEngine
      const calls: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>> = [
        engine.executeWorkflow(stranger, {}),
        engine.runWorkflow(stranger, {}),
        engine.resumeWorkflow({ workflow: stranger, executionId: "e", data: undefined })
      ]
      for (const call of calls) {
        const error = yield* Effect.flip(call)
        expect(error).toMatchObject({ _tag: "WorkflowNotRegistered", workflowId: "stranger" })
        expect(error.message).toBe("Workflow stranger is not registered in the app (defineApp({ workflows }))")
      }
      const other = yield* Effect.flip(engine.executeWorkflow(impostor, {}))
      expect(other).toMatchObject({ _tag: "WorkflowNotRegistered", workflowId: "stamp" })
      expect(other.message).toContain("not the one registered in the app")
    }))
})

layer(servicesOnSqlite(readme.app), { timeout: 60_000 })("the README's sample", (it) => {
  it.effect("runs: suspended for u1, resumed by u1 with typed data, completed with the typed result", () =>
    Effect.gen(function*() {
      const outcome = yield* readme.shoutForU1
      expect(outcome).toMatchObject({ status: "completed", result: { loud: "HI" } })
      const state = yield* Effect.flatMap(
        WorkflowEngine,
        (engine) => engine.state("announce", outcome.executionId, { all: false, userId: "u1" })
      )
      expect(state.status).toBe("completed")
    }))
})

// --- who sees an execution started from code, under JWT ------------------------------------------

const SECRET = "a-long-shared-secret-for-typed-call-tests"
const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
    new TextEncoder().encode(SECRET)
  )
const tokens = {
  u1: await sign({ sub: "u1" }),
  u2: await sign({ sub: "u2" }),
  admin: await sign({ sub: "root", role: "admin" })
}
type Who = keyof typeof tokens | "anonymous"

const jwt = {
  auth: {
    production: false,
    jwt: {
      secret: Redacted.make(SECRET),
      defaultPrivate: false,
      publicRoutes: [],
      admin: { claim: "role", value: "admin" }
    }
  }
}

layer(TestServerLive({ app, config: jwt }), { timeout: 60_000 })("an execution started from code, under JWT", (it) => {
  /** Who of u1, u2, an admin and an anonymous caller gets the execution's state over HTTP. */
  const seenBy = (executionId: string) =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const seen: Array<Who> = []
      for (const who of ["u1", "u2", "admin", "anonymous"] as const) {
        const headers: Record<string, string> = who === "anonymous" ? {} : { authorization: `Bearer ${tokens[who]}` }
        const answer = yield* fetchJson(`${url}/workflows/typed-approval/executions/${executionId}/state`, { headers })
        if (answer.status === 200) seen.push(who)
        else expect(answer.status).toBe(404)
      }
      return seen
    })

  const engineOf = Effect.map(TestServer, ({ services }) => Context.get(services, WorkflowEngine))

  it.effect("with userId u1 it is u1's (and an admin's); without one it has no owner: the anonymous scope", () =>
    Effect.gen(function*() {
      const engine = yield* engineOf
      const owned = yield* engine.executeWorkflow(approval, { amount: 900 }, { userId: "u1" })
      expect(yield* seenBy(owned.executionId)).toEqual(["u1", "admin"])
      const ownerless = yield* engine.executeWorkflow(approval, { amount: 900 })
      expect(yield* seenBy(ownerless.executionId)).toEqual(["admin", "anonymous"])

      // resumeWorkflow with a userId finds only that user's executions, like their token would.
      const decision = { approved: true, on: "2025-01-01" }
      const notU2s = yield* Effect.either(
        engine.resumeWorkflow({
          workflow: approval,
          executionId: owned.executionId,
          stepId: "ask",
          data: decision,
          userId: "u2"
        })
      )
      expect(Either.isLeft(notU2s) && notU2s.left._tag).toBe("NotFound")
      const u1s = yield* engine.resumeWorkflow({
        workflow: approval,
        executionId: owned.executionId,
        stepId: "ask",
        data: decision,
        userId: "u1"
      })
      expect(u1s.status).toBe("completed")
    }))
})

describe("the typed calls' types", () => {
  it("result, resume data and step ids follow the definition", () => {
    expectTypeOf<WorkflowInput<typeof stamp>>().toEqualTypeOf<{ readonly name: string; readonly at: Date }>()
    expectTypeOf<WorkflowResult<typeof stamp>>().toEqualTypeOf<{ readonly greeting: string; readonly due: Date }>()
    expectTypeOf<ResumeStepId<typeof approval>>().toEqualTypeOf<"check" | "ask">()
    expectTypeOf<ResumeData<typeof approval, "ask">>().toEqualTypeOf<
      { readonly approved: boolean; readonly on: string }
    >()
    // Parked at either step: `check` declares no resumeSchema, so anything may be given (the engine checks).
    expectTypeOf<ResumeData<typeof approval>>().toEqualTypeOf<unknown>()
    // A definition typed only as WorkflowDefinition carries no resume types.
    expectTypeOf<ResumeData<WorkflowDefinition<{ readonly amount: number }, unknown, never>, "ask">>().toEqualTypeOf<
      unknown
    >()
  })
})
