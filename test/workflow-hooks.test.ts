import { expect, expectTypeOf, it, layer } from "@effect/vitest"
import { Context, Data, Effect, Layer, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { workflow, type WorkflowDefinition } from "../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #31 item 3 (settled 12): workflow hooks run once each, after the state they report is
// committed, in the process that committed it, bounded to 5 s; a failing or slow one is logged and
// never fails the execution. Their service requirements join the workflow's R.

interface Heard {
  readonly hook: string
  readonly event: any
  /** The execution's status as the API showed it from inside the hook. */
  readonly status: string
}

class Audit
  extends Context.Tag("app/Audit")<Audit, { readonly hear: (hook: string, event: any) => Effect.Effect<void> }>()
{}

const heard: Array<Heard> = []
let baseUrl = ""
const statusOf = (workflowId: string, executionId: string) =>
  Effect.promise(() =>
    fetch(`${baseUrl}/workflows/${workflowId}/executions/${executionId}/state`).then((r) => r.json()).then((b) =>
      String(b.data.status)
    )
  )

const AuditLive = Layer.succeed(Audit, {
  hear: (hook, event) =>
    Effect.flatMap(
      statusOf(event.workflowId, event.executionId),
      (status) => Effect.sync(() => heard.push({ hook, event, status }))
    )
})

const hear = (hook: string) => (event: unknown) => Effect.flatMap(Audit, (audit) => audit.hear(hook, event))

class Boom extends Data.TaggedError("Boom")<{ readonly code: number; readonly message: string }> {}

const hooked = workflow({
  id: "hooked",
  name: "Hooked",
  purpose: "Tells its audit of its transitions",
  input: Schema.Struct({ mode: Schema.Literal("ok", "fail", "suspend") }),
  result: Schema.Struct({ done: Schema.Boolean }),
  onStart: (event) => {
    expectTypeOf(event.input).toEqualTypeOf<{ readonly mode: "ok" | "fail" | "suspend" }>()
    return hear("onStart")(event)
  },
  onSuspend: hear("onSuspend"),
  onFinish: (event) => {
    expectTypeOf(event.result).toEqualTypeOf<{ readonly done: boolean }>()
    return hear("onFinish")(event)
  },
  onError: hear("onError")
}).andThen({
  id: "work",
  execute: ({ data, resumeData, suspend }) => {
    if (data.mode === "fail") return Effect.fail(new Boom({ code: 7, message: "it broke" }))
    if (data.mode === "suspend" && resumeData === undefined) return suspend("needs a look", { mode: data.mode })
    return Effect.succeed({ done: true })
  }
})

class HookBoom extends Data.TaggedError("HookBoom")<{ readonly message: string }> {}
const slowInterrupted = new Set<string>()

const flawed = workflow({
  id: "flawed-hooks",
  name: "Flawed hooks",
  purpose: "Its hooks fail, throw, or hang",
  input: Schema.Struct({ slow: Schema.Boolean }),
  result: Schema.Number,
  onStart: () => {
    throw new Error("onStart threw")
  },
  onFinish: (event) =>
    event.result === 1
      ? Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => slowInterrupted.add(event.executionId))))
      : Effect.fail(new HookBoom({ message: "the audit is down" }))
}).andThen({ id: "one", execute: ({ data }) => (data.slow ? 1 : 2) })

/** Runs until suspended from the API. */
const held = workflow({
  id: "held",
  name: "Held",
  purpose: "Waits until suspended from outside",
  input: Schema.Struct({}),
  result: Schema.Struct({}),
  onSuspend: hear("onSuspend")
}).andThen({ id: "hold", execute: ({ resumeData }) => (resumeData === undefined ? Effect.never : Effect.succeed({})) })

const app = defineApp({ workflows: [hooked, flawed, held] })

const poll = <A>(what: string, read: () => A | undefined, deadlineMs = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + deadlineMs
    while (true) {
      const found = read()
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${deadlineMs / 1000} s`)
      yield* Effect.sleep("50 millis")
    }
  })

const heardFor = (executionId: string) => heard.filter((h) => h.event.executionId === executionId)

layer(TestServerLive({ app, provide: AuditLive }), { excludeTestServices: true })("workflow hooks", (it) => {
  it.effect("onStart and onFinish run once each, after their state is committed, with the input and the result", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      baseUrl = url
      const run = yield* fetchJson(
        `${url}/workflows/hooked/execute`,
        json({ input: { mode: "ok" }, options: { executionId: "h-ok" } })
      )
      expect(run.body.data.status).toBe("completed")
      yield* poll("onFinish", () => heardFor("h-ok").find((h) => h.hook === "onFinish"))
      yield* Effect.sleep("300 millis") // anything that would run a second time has had the time to
      const got = heardFor("h-ok")
      expect(got.map((h) => h.hook).sort()).toEqual(["onFinish", "onStart"])
      // The execution was stored when onStart ran (it may have completed meanwhile).
      expect(got.find((h) => h.hook === "onStart")).toMatchObject({
        event: { executionId: "h-ok", workflowId: "hooked", input: { mode: "ok" } },
        status: expect.stringMatching(/^(running|completed)$/)
      })
      expect(got.find((h) => h.hook === "onFinish")).toMatchObject({
        event: { result: { done: true } },
        status: "completed"
      })

      // Each hook ran in its own span, a child of the execution's drive span.
      const spans = yield* Effect.gen(function*() {
        const deadline = Date.now() + 20_000
        while (Date.now() < deadline) {
          const traces =
            (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=hooked&limit=50`)).body.data
              .traces
          for (const summary of traces) {
            const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
            const hooks = trace.spans.filter((span: any) =>
              span.name.startsWith("workflow.hook ") && span.attributes["execution.id"] === "h-ok"
            )
            if (hooks.length === 2) return { hooks: hooks as Array<any>, all: trace.spans as Array<any> }
          }
          yield* Effect.sleep("100 millis")
        }
        throw new Error("the hooks' spans did not appear within 20 s")
      })
      expect(spans.hooks.map((span: any) => span.name).sort()).toEqual([
        "workflow.hook onFinish",
        "workflow.hook onStart"
      ])
      for (const hook of spans.hooks) {
        expect(spans.all.find((span) => span.spanId === hook.parentSpanId)?.name).toBe("WorkflowEngine.drive")
      }
    }))

  it.effect("onError gets the error and its detail; onSuspend the step, reason and data; a resume is no new start", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      baseUrl = url
      const failed = yield* fetchJson(
        `${url}/workflows/hooked/execute`,
        json({ input: { mode: "fail" }, options: { executionId: "h-fail" } })
      )
      expect(failed.status).toBe(500)
      const onError = yield* poll("onError", () => heardFor("h-fail").find((h) => h.hook === "onError"))
      expect(onError).toMatchObject({
        event: {
          error: "step work: it broke",
          errorDetail: { _tag: "Boom", message: "it broke", fields: { code: 7 } }
        },
        status: "error"
      })

      const suspended = yield* fetchJson(
        `${url}/workflows/hooked/execute`,
        json({ input: { mode: "suspend" }, options: { executionId: "h-sus" } })
      )
      expect(suspended.body.data.status).toBe("suspended")
      const onSuspend = yield* poll("onSuspend", () => heardFor("h-sus").find((h) => h.hook === "onSuspend"))
      expect(onSuspend).toMatchObject({
        event: { stepId: "work", reason: "needs a look", data: { mode: "suspend" } },
        status: "suspended"
      })
      const resumed = yield* fetchJson(`${url}/workflows/hooked/executions/h-sus/resume`, json({ resumeData: {} }))
      expect(resumed.body.data.status).toBe("completed")
      yield* poll("onFinish after the resume", () => heardFor("h-sus").find((h) => h.hook === "onFinish"))
      yield* Effect.sleep("300 millis")
      expect(heardFor("h-sus").map((h) => h.hook).sort()).toEqual(["onFinish", "onStart", "onSuspend"])
    }))

  it.effect("an API suspend runs onSuspend too (no data)", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      baseUrl = url
      const started = yield* fetchJson(
        `${url}/workflows/held/run`,
        json({ input: {}, options: { executionId: "h-held" } })
      )
      expect(started.status).toBe(201)
      const suspended = yield* fetchJson(
        `${url}/workflows/held/executions/h-held/suspend`,
        json({ reason: "paused by ops" })
      )
      expect(suspended.status).toBe(200)
      const onSuspend = yield* poll("onSuspend", () => heardFor("h-held").find((h) => h.hook === "onSuspend"))
      expect(onSuspend).toMatchObject({ event: { stepId: "hold", reason: "paused by ops" }, status: "suspended" })
      expect(onSuspend.event.data).toBeUndefined()
    }))

  it.effect("a hook that fails or throws is logged and the execution completes", () =>
    Effect.gen(function*() {
      const { logs, url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/flawed-hooks/execute`,
        json({ input: { slow: false }, options: { executionId: "f-1" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: 2 })
      const failed = (hook: string, tag: string) => () =>
        logs.find((line) => line.includes(`workflow hook ${hook} failed (${tag}`) && line.includes("executionId=f-1"))
      expect(yield* poll("onFinish's failure logged", failed("onFinish", "HookBoom: the audit is down"))).toContain(
        "the execution is not affected"
      )
      yield* poll("onStart's throw logged", failed("onStart", "Error: onStart threw"))
    }))

  it.effect(
    "a hook that hangs is stopped after 5 s and logged; the execution did not wait for it",
    () =>
      Effect.gen(function*() {
        const { logs, url } = yield* TestServer
        const before = Date.now()
        const run = yield* fetchJson(
          `${url}/workflows/flawed-hooks/execute`,
          json({ input: { slow: true }, options: { executionId: "f-slow" } })
        )
        expect(run.body.data).toMatchObject({ status: "completed", result: 1 })
        expect(Date.now() - before).toBeLessThan(4000)
        yield* poll("the hung hook interrupted", () => (slowInterrupted.has("f-slow") ? true : undefined))
        expect(Date.now() - before).toBeGreaterThanOrEqual(4900)
        yield* poll("the hung hook logged", () =>
          logs.find((line) =>
            line.includes("workflow hook onFinish failed (HookTimedOut: did not finish within 5s)") &&
            line.includes("executionId=f-slow")
          ))
      }),
    30_000
  )
})

it("hooks' service requirements join the workflow's R", () => {
  expectTypeOf(hooked).toMatchTypeOf<
    WorkflowDefinition<{ readonly mode: "ok" | "fail" | "suspend" }, { readonly done: boolean }, Audit>
  >()
  expectTypeOf(hooked).not.toMatchTypeOf<
    WorkflowDefinition<{ readonly mode: "ok" | "fail" | "suspend" }, { readonly done: boolean }, never>
  >()
  const typed = workflow({
    id: "typed",
    name: "T",
    purpose: "T",
    input: Schema.Number,
    result: Schema.Number,
    onError: () => Promise.resolve()
  })
    .andThen({ id: "one", execute: ({ data }) => data })
  // A hook returning a Promise or a value requires nothing.
  expectTypeOf(typed).toMatchTypeOf<WorkflowDefinition<number, number, never>>()
})
