import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { assistant } from "../src/examples/agents.js"
import { approval, pipeline, slow } from "../src/examples/workflows.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { parseSse, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, makeClient, TestServer, TestServerLive } from "./support/TestServer.js"

const interrupted = { all: Effect.runSync(Deferred.make<string>()), race: Effect.runSync(Deferred.make<string>()) }

const NumberIn = Schema.Struct({ n: Schema.Number })

const child = workflow({
  id: "child",
  name: "Child",
  purpose: "Adds one, may suspend",
  input: NumberIn,
  result: NumberIn
})
  .andThen({
    id: "plus-one",
    execute: ({ data, resumeData, suspend }) =>
      data.n < 0 && resumeData === undefined ? suspend("child needs a go") : { n: data.n + 1 }
  })

const steps = workflow({
  id: "steps",
  name: "Steps",
  purpose: "Exercises the step types",
  input: NumberIn,
  result: Schema.Unknown,
  resumeSchema: Schema.Struct({ go: Schema.Boolean })
})
  .andWhen({
    id: "when",
    condition: ({ data }) => data.n > 10,
    step: { id: "halve", execute: ({ data }) => ({ n: data.n / 2 }) }
  })
  .andTap({ id: "tap-fails", execute: () => Effect.fail(new Error("tap broke")) })
  .andWorkflow({ id: "sub", workflow: child })
  .andAgent({ id: "ask", agent: assistant, prompt: ({ data }) => `number ${data.n}` })
  .andAgent({
    id: "ask-object",
    agent: assistant,
    prompt: () => "give me an object",
    output: { type: "object", properties: { label: { type: "string" } }, required: ["label"] }
  })
  .andThen({
    id: "collect",
    execute: ({ getStepData }) => ({
      sub: getStepData("sub"),
      ask: getStepData("ask"),
      object: getStepData("ask-object")
    })
  })

const allFails = workflow({
  id: "all-fails",
  name: "All fails",
  purpose: "andAll with a failure",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andAll({
    id: "parallel",
    steps: [
      { id: "boom", execute: () => Effect.fail(new Error("boom")) },
      {
        id: "patient",
        execute: () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted.all, "interrupted")))
      }
    ]
  })

const race = workflow({
  id: "race",
  name: "Race",
  purpose: "andRace",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andRace({
    id: "race",
    steps: [
      { id: "quick", execute: () => Effect.as(Effect.sleep("5 millis"), "quick") },
      {
        id: "loser",
        execute: () =>
          Effect.as(Effect.sleep("1 minute"), "loser").pipe(
            Effect.onInterrupt(() => Deferred.succeed(interrupted.race, "interrupted"))
          )
      }
    ]
  })

const failing = workflow({
  id: "failing",
  name: "Failing",
  purpose: "fails",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "ok", execute: () => 1 })
  .andThen({ id: "explode", execute: () => Promise.reject(new Error("disk on fire")) })

const app = defineApp({ agents: [assistant], workflows: [approval, pipeline, slow, steps, allFails, race, failing] })

const waitForStatus = (url: string, workflowId: string, executionId: string, status: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 200; i++) {
      const state = await fetch(`${url}/workflows/${workflowId}/executions/${executionId}/state`).then((r) => r.json())
      if (state.data?.status === status) return state.data
      await new Promise((r) => setTimeout(r, 25))
    }
    throw new Error(`${executionId} never reached ${status}`)
  })

layer(TestServerLive({ app }), { excludeTestServices: true })("workflows over HTTP", (it) => {
  it.effect("GET /workflows and /workflows/:id: spec step types, real JSON Schema, null schemas, no source", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const list = yield* fetchJson(`${url}/workflows`)
      expect(list.body.data.find((w: any) => w.id === "approval")).toEqual({
        id: "approval",
        name: "Approval",
        purpose: expect.any(String),
        stepsCount: 2,
        status: "idle"
      })
      const details = (yield* fetchJson(`${url}/workflows/pipeline`)).body.data
      expect(details.steps.map((s: any) => [s.id, s.type])).toEqual([
        ["normalize", "andThen"],
        ["measure", "andAll"],
        ["merge", "andThen"],
        ["double-if-large", "andWhen"],
        ["audit", "andTap"],
        ["finishers", "andRace"],
        ["finish", "andThen"]
      ])
      expect(details.inputSchema).toMatchObject({ type: "object", required: ["text", "n"] })
      expect(details.suspendSchema).toBeNull()
      expect(details.resumeSchema).toBeNull()
      expect(JSON.stringify(details)).not.toMatch(/=>|function/)
      const approvalDetails = (yield* fetchJson(`${url}/workflows/approval`)).body.data
      expect(approvalDetails.steps[1].resumeSchema).toMatchObject({ type: "object", required: ["approved"] })
      const stepTypes = (yield* fetchJson(`${url}/workflows/steps`)).body.data.steps.map((s: any) => s.type)
      expect(stepTypes).toEqual(["andWhen", "andTap", "andWorkflow", "andAgent", "andAgent", "andThen"])
      expect(yield* fetchJson(`${url}/workflows/nope`)).toMatchObject({
        status: 404,
        body: { error: "Workflow nope not found" }
      })
    }))

  it.effect("pipeline: andThen, andAll in order, andWhen, andTap, andRace (first wins)", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const big = yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: " hi ", n: 21 } }))
      expect(big.status).toBe(200)
      expect(big.body.data).toMatchObject({
        status: "completed",
        result: { text: "hi", upper: "HI", length: 2, doubled: 42, winner: "fast" },
        endAt: expect.any(String)
      })
      const client = yield* makeClient
      const small = yield* client.workflows.executeWorkflow({
        path: { id: "pipeline" },
        headers: {},
        payload: { input: { text: "abc", n: 3 } }
      })
      expect(small.result).toEqual({ text: "abc", upper: "ABC", length: 3, doubled: 3, winner: "fast" })
    }))

  it.effect("andWhen false passes through, andTap failure is logged not fatal, andWorkflow and andAgent", () =>
    Effect.gen(function*() {
      const { logs, url } = yield* TestServer
      const response = yield* fetchJson(`${url}/workflows/steps/execute`, json({ input: { n: 4 } }))
      expect(response.status).toBe(200)
      expect(response.body.data.result).toEqual({
        sub: { n: 5 },
        ask: "[builtin/echo] You said: number 5",
        object: { label: "example" }
      })
      expect(logs.some((line) => line.includes("tap step tap-fails failed: tap broke"))).toBe(true)
      const halved = yield* fetchJson(`${url}/workflows/steps/execute`, json({ input: { n: 20 } }))
      expect(halved.body.data.result.sub).toEqual({ n: 11 })
    }))

  it.effect("a suspended sub-workflow suspends the parent; resuming continues it", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* makeClient
      const first = yield* client.workflows.executeWorkflow({
        path: { id: "steps" },
        headers: {},
        payload: { input: { n: -3 } }
      })
      expect(first).toMatchObject({
        status: "suspended",
        suspension: { reason: "child needs a go", suspendedStepIndex: 2 }
      })
      const id = first.executionId
      const bad = yield* fetchJson(
        `${url}/workflows/steps/executions/${id}/resume`,
        json({ resumeData: { go: "yes" } })
      )
      expect(bad).toMatchObject({
        status: 400,
        body: { error: "Input validation failed: resumeData.go: Expected boolean, actual \"yes\"" }
      })
      const resumed = yield* client.workflows.resumeExecution({
        path: { id: "steps", executionId: id },
        payload: { resumeData: { go: true } }
      })
      expect(resumed).toMatchObject({ status: "completed", result: { sub: { n: -2 } } })
    }))

  it.effect("andAll: the first failure fails the step and interrupts the rest; andRace interrupts the loser", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const failed = yield* fetchJson(`${url}/workflows/all-fails/execute`, json({ input: {} }))
      expect(failed.status).toBe(500)
      expect(failed.body).toEqual({
        success: false,
        error: "Failed to execute workflow: step boom: boom",
        executionId: expect.any(String)
      })
      expect(yield* Deferred.await(interrupted.all).pipe(Effect.timeout("2 seconds"))).toBe("interrupted")
      const raced = yield* fetchJson(`${url}/workflows/race/execute`, json({ input: {} }))
      expect(raced.body.data.result).toBe("quick")
      expect(yield* Deferred.await(interrupted.race).pipe(Effect.timeout("2 seconds"))).toBe("interrupted")
    }))

  it.effect("approval: suspend, state, resume with validation, resume again is 404", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const small = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 50 } }))
      expect(small.body.data).toMatchObject({ status: "completed", result: { approved: true, amount: 50 } })

      const started = yield* fetchJson(
        `${url}/workflows/approval/execute`,
        json({
          input: { amount: 500 },
          options: { executionId: "approval-1", context: { team: "ops" } }
        })
      )
      expect(started.body.data).toEqual({
        executionId: "approval-1",
        startAt: expect.any(String),
        endAt: null,
        status: "suspended",
        result: null,
        suspension: { suspendedAt: expect.any(String), reason: "manager approval required", suspendedStepIndex: 1 }
      })
      const base = `${url}/workflows/approval/executions/approval-1`
      const state = yield* fetchJson(`${base}/state`)
      expect(state.body.data).toMatchObject({
        executionId: "approval-1",
        workflowId: "approval",
        status: "suspended",
        suspension: { reason: "manager approval required", stepIndex: 1, stepId: "manager-approval" },
        input: { amount: 500 },
        context: { team: "ops" }
      })
      const invalid = yield* fetchJson(`${base}/resume`, json({ resumeData: { approved: "maybe" } }))
      expect(invalid.status).toBe(400)
      expect(invalid.body.error).toBe(
        "Input validation failed: resumeData.approved: Expected boolean, actual \"maybe\""
      )
      const unknownStep = yield* fetchJson(
        `${base}/resume`,
        json({ resumeData: { approved: true }, options: { stepId: "nope" } })
      )
      expect(unknownStep).toMatchObject({ status: 400, body: { error: "Workflow approval has no step nope" } })
      const suspendAgain = yield* fetchJson(`${base}/suspend`, json({ reason: "again" }))
      expect(suspendAgain).toMatchObject({ status: 400, body: { error: "Execution approval-1 is suspended" } })

      const resumed = yield* fetchJson(`${base}/resume`, json({ resumeData: { approved: false } }))
      expect(resumed.body.data).toMatchObject({
        executionId: "approval-1",
        status: "completed",
        result: { approved: false, amount: 500 },
        startAt: started.body.data.startAt
      })
      expect(yield* fetchJson(`${base}/resume`, json({ resumeData: { approved: true } }))).toMatchObject({
        status: 404,
        body: { error: "Execution approval-1 is not suspended (it is completed)" }
      })
      expect((yield* fetchJson(`${base}/suspend`, json({}))).status).toBe(400)
      expect((yield* fetchJson(`${base}/cancel`, json({}))).body.error).toBe("Execution approval-1 is completed")
      const finalState = yield* fetchJson(`${base}/state`)
      expect(finalState.body.data).toMatchObject({
        status: "completed",
        result: { approved: false, amount: 500 },
        endAt: expect.any(String)
      })

      for (const path of ["resume", "suspend", "cancel"]) {
        const missing = yield* fetchJson(`${url}/workflows/approval/executions/nope/${path}`, json({ resumeData: {} }))
        expect(missing).toMatchObject({ status: 404, body: { error: "Execution nope not found" } })
      }
      expect((yield* fetchJson(`${url}/workflows/slow/executions/approval-1/state`)).status).toBe(404)
      const duplicate = yield* fetchJson(
        `${url}/workflows/approval/execute`,
        json({
          input: { amount: 1 },
          options: { executionId: "approval-1" }
        })
      )
      expect(duplicate).toMatchObject({ status: 400, body: { error: "Execution approval-1 already exists" } })
      // A stream must refuse it before its status line, not in an error frame after a 200.
      const duplicateStream = yield* Effect.promise(() =>
        fetch(
          `${url}/workflows/approval/stream`,
          json({ input: { amount: 1 }, options: { executionId: "approval-1" } })
        )
          .then(async (r) => ({ status: r.status, body: await r.json() }))
      )
      expect(duplicateStream).toMatchObject({ status: 400, body: { error: "Execution approval-1 already exists" } })
    }))

  it.effect("input failing the schema is 400 and nothing is stored", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const before = (yield* fetchJson(`${url}/workflows/executions?workflowId=approval&limit=500`)).body.data.length
      const bad = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: "lots" } }))
      expect(bad).toMatchObject({
        status: 400,
        body: { success: false, error: "Input validation failed: input.amount: Expected number, actual \"lots\"" }
      })
      const missing = yield* fetchJson(`${url}/workflows/approval/run`, json({ input: {} }))
      expect(missing.body.error).toBe("Input validation failed: input.amount: is missing")
      const after = (yield* fetchJson(`${url}/workflows/executions?workflowId=approval&limit=500`)).body.data.length
      expect(after).toBe(before)
    }))

  it.effect("a failing step: 500 with the execution id; stored as error", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(`${url}/workflows/failing/execute`, json({ input: {} }))
      expect(response.status).toBe(500)
      expect(response.body.error).toBe("Failed to execute workflow: step explode: disk on fire")
      const state = yield* fetchJson(`${url}/workflows/failing/executions/${response.body.executionId}/state`)
      expect(state.body.data).toMatchObject({ status: "error", error: "step explode: disk on fire" })
    }))

  it.effect("run answers 201 at once; external suspend stores the step; resume re-runs it; cancel", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/slow/run`,
        json({ input: { ms: 60_000 }, options: { executionId: "slow-1" } })
      )
      expect(run).toMatchObject({
        status: 201,
        body: {
          success: true,
          data: { executionId: "slow-1", workflowId: "slow", status: "running", startAt: expect.any(String) }
        }
      })
      const base = `${url}/workflows/slow/executions/slow-1`
      yield* waitForStatus(url, "slow", "slow-1", "running")
      const suspended = yield* fetchJson(`${base}/suspend`, json({ reason: "maintenance" }))
      expect(suspended.body.data).toEqual({
        executionId: "slow-1",
        status: "suspended",
        suspension: { suspendedAt: expect.any(String), reason: "maintenance" }
      })
      const state = yield* fetchJson(`${base}/state`)
      expect(state.body.data.suspension).toMatchObject({ reason: "maintenance", stepIndex: 0, stepId: "wait" })

      const cancelled = yield* fetchJson(`${base}/cancel`, json({ reason: "not needed" }))
      expect(cancelled.body.data).toEqual({
        executionId: "slow-1",
        status: "cancelled",
        cancelledAt: expect.any(String),
        reason: "not needed"
      })
      expect(yield* fetchJson(`${base}/resume`, json({}))).toMatchObject({
        status: 404,
        body: { success: false, error: "Execution slow-1 is not suspended (it is cancelled)" }
      })

      yield* fetchJson(`${url}/workflows/slow/run`, json({ input: { ms: 60_000 }, options: { executionId: "slow-2" } }))
      yield* fetchJson(`${url}/workflows/slow/executions/slow-2/suspend`, json({}))
      const resumed = yield* fetchJson(`${url}/workflows/slow/executions/slow-2/cancel`, json({}))
      expect(resumed.body.data.status).toBe("cancelled")
    }))

  it.effect("an execute in progress answers cancelled when the execution is cancelled meanwhile", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const pending = fetch(
        `${url}/workflows/slow/execute`,
        json({ input: { ms: 60_000 }, options: { executionId: "slow-3" } })
      )
        .then((r) => r.json())
      yield* waitForStatus(url, "slow", "slow-3", "running")
      yield* fetchJson(`${url}/workflows/slow/executions/slow-3/cancel`, json({}))
      const answer = yield* Effect.promise(() => pending)
      expect(answer.data).toMatchObject({ executionId: "slow-3", status: "cancelled", result: null })
    }))

  it.effect("a suspended execution resumes after external suspend and completes, re-running the step", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* fetchJson(`${url}/workflows/slow/run`, json({ input: { ms: 300 }, options: { executionId: "slow-4" } }))
      yield* fetchJson(`${url}/workflows/slow/executions/slow-4/suspend`, json({}))
      const resumed = yield* fetchJson(`${url}/workflows/slow/executions/slow-4/resume`, json({}))
      expect(resumed.body.data).toMatchObject({ status: "completed", result: { waitedMs: 300 } })
    }))

  it.effect("stream: numbered frames from workflow-start to workflow-result, also when it suspends", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const done = yield* postSse(`${url}/workflows/approval/stream`, { input: { amount: 5 } })
      expect(done.events.map((e) => e.data.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-complete",
        "step-start",
        "step-complete",
        "workflow-complete",
        "workflow-result"
      ])
      expect(done.events.map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5, 6, 7])
      expect(done.events[0].data).toMatchObject({
        executionId: expect.any(String),
        from: "Approval",
        timestamp: expect.any(String)
      })
      expect(done.events.at(-1)!.data).toMatchObject({ status: "completed", result: { approved: true, amount: 5 } })

      const parked = yield* postSse(`${url}/workflows/approval/stream`, { input: { amount: 900 } })
      const types = parked.events.map((e) => e.data.type)
      expect(types.slice(-2)).toEqual(["workflow-suspended", "workflow-result"])
      expect(parked.events.at(-1)!.data).toMatchObject({
        status: "suspended",
        result: null,
        endAt: null,
        suspension: { reason: "manager approval required", suspendedStepIndex: 1 }
      })
    }))

  it.effect("re-attach replays exactly the events after the given id, then follows live ones", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 200 } }))
      const id = run.body.data.executionId
      const all = yield* Effect.promise(() =>
        fetch(`${url}/workflows/approval/executions/${id}/stream`).then((r) => r.text())
      )
      const allEvents = parseSse(all)
      expect(allEvents.map((e) => e.data.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-complete",
        "step-start",
        "workflow-suspended",
        "workflow-result"
      ])
      const after3 = parseSse(
        yield* Effect.promise(() =>
          fetch(`${url}/workflows/approval/executions/${id}/stream`, { headers: { "last-event-id": "3" } }).then((r) =>
            r.text()
          )
        )
      )
      expect(after3.map((e) => Number(e.id))).toEqual([4, 5, 6])
      const query = parseSse(
        yield* Effect.promise(() =>
          fetch(`${url}/workflows/approval/executions/${id}/stream?after=5`).then((r) => r.text())
        )
      )
      expect(query.map((e) => e.data.type)).toEqual(["workflow-result"])

      const slowRun = yield* fetchJson(`${url}/workflows/slow/run`, json({ input: { ms: 300 } }))
      const live = parseSse(
        yield* Effect.promise(() =>
          fetch(`${url}/workflows/slow/executions/${slowRun.body.data.executionId}/stream`).then((r) => r.text())
        )
      )
      expect(live.map((e) => e.data.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-complete",
        "workflow-complete",
        "workflow-result"
      ])
      // An id past the last stored event on a running execution still ends with its settling.
      const ahead = yield* fetchJson(`${url}/workflows/slow/run`, json({ input: { ms: 300 } }))
      const aheadEvents = parseSse(
        yield* Effect.promise(() =>
          fetch(`${url}/workflows/slow/executions/${ahead.body.data.executionId}/stream?after=999`, {
            signal: AbortSignal.timeout(20_000)
          }).then((r) => r.text())
        )
      )
      expect(aheadEvents.map((e) => e.data.type).slice(-2)).toEqual(["workflow-complete", "workflow-result"])
      expect((yield* fetchJson(`${url}/workflows/approval/executions/nope/stream`)).status).toBe(404)
    }))

  it.effect("executions list: filters, newest first, default and maximum limit, offset, bad filters 400", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* makeClient
      for (let i = 0; i < 3; i++) {
        yield* client.workflows.executeWorkflow({
          path: { id: "race" },
          headers: {},
          payload: { input: {}, options: { executionId: `race-list-${i}` } }
        })
      }
      const races = yield* client.workflows.listExecutions({ urlParams: { workflowId: "race" } })
      const ids = races.map((e) => e.id)
      expect(ids.slice(0, 3)).toEqual(["race-list-2", "race-list-1", "race-list-0"])
      const record = races[0]
      expect(record).toMatchObject({
        workflowId: "race",
        workflowName: "Race",
        status: "completed",
        input: {},
        output: "quick",
        metadata: { traceId: expect.stringMatching(/^[0-9a-f]{32}$/), spanId: expect.stringMatching(/^[0-9a-f]{16}$/) },
        createdAt: expect.any(String),
        updatedAt: expect.any(String)
      })
      expect(record.events.map((e) => e.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-complete",
        "workflow-complete"
      ])
      expect(record.events[0]).toMatchObject({
        id: "1",
        name: "Race",
        from: "Race",
        status: "running",
        startTime: expect.any(String)
      })

      const paged = yield* client.workflows.listExecutions({ urlParams: { workflowId: "race", limit: 1, offset: 1 } })
      expect(paged.map((e) => e.id)).toEqual(["race-list-1"])
      const cancelled = yield* client.workflows.listExecutions({ urlParams: { status: "cancelled" } })
      expect(cancelled.every((e) => e.status === "cancelled")).toBe(true)
      expect(cancelled.length).toBeGreaterThan(0)
      const everything = yield* fetchJson(`${url}/workflows/executions?limit=100000`)
      expect(everything.status).toBe(200)
      expect(yield* client.workflows.listExecutions({ urlParams: { from: "2999-01-01T00:00:00Z" } })).toEqual([])
      expect(yield* client.workflows.listExecutions({ urlParams: { to: "2000-01-01T00:00:00Z" } })).toEqual([])
      expect((yield* fetchJson(`${url}/workflows/executions?status=sleeping`)).status).toBe(400)
      expect((yield* fetchJson(`${url}/workflows/executions?from=yesterday`)).body.error).toBe(
        "Input validation failed: from: must be an ISO 8601 timestamp"
      )
      expect((yield* fetchJson(`${url}/workflows/executions?limit=-1`)).status).toBe(400)
      expect(yield* fetchJson(`${url}/workflows/executions?workflowId=nope`)).toMatchObject({
        status: 404,
        body: { error: "Workflow nope not found" }
      })
    }))

  it.effect(
    "50 trials of two concurrent resumes: exactly one proceeds, the other gets 404",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (let trial = 0; trial < 50; trial++) {
          const started = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 1000 } }))
          const resume = `${url}/workflows/approval/executions/${started.body.data.executionId}/resume`
          const [a, b] = yield* Effect.all(
            [
              fetchJson(resume, json({ resumeData: { approved: true } })),
              fetchJson(resume, json({ resumeData: { approved: false } }))
            ],
            { concurrency: 2 }
          )
          expect([a.status, b.status].sort()).toEqual([200, 404])
          const winner = a.status === 200 ? a : b
          expect(winner.body.data.status).toBe("completed")
        }
      }),
    60_000
  )

  it.effect("every execution writes log entries carrying workflowId and executionId", () =>
    Effect.gen(function*() {
      const { logs, url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/race/execute`,
        json({ input: {}, options: { executionId: "logged-run" } })
      )
      expect(run.status).toBe(200)
      expect(logs.some((l) =>
        l.includes("workflow started") && l.includes("workflowId=race") && l.includes("executionId=logged-run")
      ))
        .toBe(true)
    }))
})
