#!/usr/bin/env node
// The service `npm run chaos` runs (issue #31 settled 15): the example app embedded from the build
// (dist/, as README "Embedding" does it) plus chaos workflows whose every step, item, iteration,
// branch, retry attempt and child step appends (executionId, path, attempt, time) to a file of this
// process's own, outside the engine's store and transaction: scripts/support/recorded.ts reads the
// files back and checks them against the committed events. Plain JavaScript on purpose: it runs the
// build as shipped, with no compile step of its own, so test/chaos.test.ts can spawn it.
// Usage: CHAOS_RECORD_DIR=dir node scripts/chaos-main.mjs --port N (the flags of dist/main.js).
import { NodeRuntime } from "@effect/platform-node"
import { Data, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { appendFileSync } from "node:fs"
import { join } from "node:path"
import { exampleApp } from "../dist/examples/app.js"
import { defineApp, loadConfig, ServiceLive, workflow } from "../dist/index.js"

const dir = process.env.CHAOS_RECORD_DIR
if (dir === undefined || dir === "") {
  process.stderr.write("error: CHAOS_RECORD_DIR must name the directory the chaos steps record their starts in\n")
  process.exit(2)
}
// One file per process (the pid and its start: a pid may come again after many restarts).
const file = join(dir, `${process.pid}-${Date.now()}.jsonl`)

/**
 * A step's start, appended synchronously before its work: the line is in the kernel before any
 * commit it could precede, so a SIGKILL keeps it.
 */
const started = ({ executionId, path, attempt }) =>
  appendFileSync(file, `${JSON.stringify({ executionId, path, attempt, time: Date.now() })}\n`)

/** Some work that a kill can cut: 0 to `ms` milliseconds. */
const work = (ms) => Effect.sleep(Duration.millis(Math.floor(Math.random() * ms)))

/** A step that records its start, works a little, then answers `output(context)`. */
const recorded = (id, output, ms = 40) => ({
  id,
  execute: (context) => {
    started(context)
    return Effect.as(work(ms), output(context))
  }
})

class Flaky extends Data.TaggedError("Flaky") {}

const child = workflow({
  id: "chaos-child",
  name: "Chaos child",
  purpose: "Two recorded steps with a durable sleep between them (it parks the parent), run as a child of chaos-flow",
  input: Schema.Struct({ total: Schema.Number }),
  result: Schema.Struct({ total: Schema.Number, stored: Schema.Boolean })
})
  .andThen(recorded("load", ({ data }) => ({ total: data.total + 1 })))
  .andSleep({ id: "pause", duration: Duration.millis(300) })
  .andThen(recorded("store", ({ data }) => ({ total: data.total, stored: true })))

/**
 * Every kind of step the engine checkpoints, each recording its starts: a durable sleep, a loop over
 * items, a loop of iterations, branches, a step retried with back-off (long enough, at the second
 * failure, to park) and a child workflow.
 */
const flow = workflow({
  id: "chaos-flow",
  name: "Chaos flow",
  purpose: "Recorded steps of every kind, for the chaos tool's oracle",
  input: Schema.Struct({
    sleepMs: Schema.Number.pipe(Schema.between(0, 10_000)),
    items: Schema.Int.pipe(Schema.between(1, 50)),
    iterations: Schema.Int.pipe(Schema.between(1, 20)),
    failures: Schema.Int.pipe(Schema.between(0, 3))
  }),
  result: Schema.Struct({ total: Schema.Number, stored: Schema.Boolean })
})
  .andThen(recorded("before", ({ input }) => input.items))
  .andSleep({ id: "nap", duration: ({ input }) => Duration.millis(input.sleepMs) })
  .andThen(recorded("after", ({ input }) => Array.from({ length: input.items }, (_, index) => index)))
  .andForEach({
    id: "items",
    items: ({ data }) => data,
    concurrency: 4,
    step: recorded("item", ({ data }) => data * 2)
  })
  .andThen(recorded("sum", ({ data }) => data.reduce((total, value) => total + value, 0)))
  .andDoUntil({
    id: "loop",
    maxIterations: 20,
    step: recorded("round", ({ data, iteration }) => ({ total: data.total ?? data, round: iteration + 1 })),
    condition: ({ data, input }) => data.round >= input.iterations
  })
  .andBranch({
    id: "route",
    branches: [
      { condition: ({ data }) => data.total % 2 === 0, step: recorded("even", ({ data }) => data.total) },
      { condition: () => true, step: recorded("always", ({ data }) => data.total) }
    ]
  })
  .andThen({
    id: "flaky",
    execute: (context) => {
      started(context)
      const total = context.data[1]
      return context.attempt <= context.input.failures ? Effect.fail(new Flaky()) : Effect.as(work(40), { total })
    },
    // 300 ms, then 1.2 s: the second back-off parks the execution like a sleep.
    retry: {
      schedule: Schedule.exponential("300 millis", 4).pipe(Schedule.intersect(Schedule.recurs(3))),
      while: (error) => error._tag === "Flaky"
    }
  })
  .andWorkflow({ id: "child", workflow: child })

/**
 * Issue #33: a code schedule firing every second (each time missed while every instance was down
 * fired too, `catchUp: "all"`), whose one step records its starts: scripts/support/scheduled.ts checks
 * one execution per second, none missed, none started twice.
 */
const tick = workflow({
  id: "chaos-tick",
  name: "Chaos tick",
  purpose: "Fired by a schedule every second; its one recorded step runs up to 300 ms",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Number,
  schedule: { cron: "* * * * * *", catchUp: "all", input: { n: 1 } }
})
  .andThen(recorded("tick", ({ input }) => input.n, 300))

/**
 * Issue #33: at most two executions of a group run at once, the others wait queued; a sleep between the
 * two recorded steps frees the slot (and waking queues again). scripts/support/queued.ts checks from the
 * recorded starts and the committed steps that no more than two of a group ever ran at once.
 */
const queue = workflow({
  id: "chaos-queue",
  name: "Chaos queue",
  purpose: "Two at a time per group: two recorded steps with a sleep between them",
  input: Schema.Struct({ group: Schema.Literal("a", "b") }),
  result: Schema.Boolean,
  concurrency: { limit: 2, key: (input) => input.group }
})
  // At least 200 ms: a burst of starts finds the group's two slots held (the run always queues some).
  .andThen({
    id: "hold",
    execute: (context) => {
      started(context)
      return Effect.as(Effect.sleep(Duration.millis(200 + Math.floor(Math.random() * 100))), true)
    }
  })
  .andSleep({ id: "rest", duration: Duration.millis(200) })
  .andThen(recorded("release", () => true, 300))

const app = defineApp({
  agents: exampleApp.agents,
  tools: exampleApp.tools,
  workflows: [...exampleApp.workflows, child, flow, tick, queue]
})

// A schedule each second: the test setting `schedules.minIntervalSeconds: 1` of the config file.
const withSecondSchedules = (config) => ({ ...config, schedules: { ...config.schedules, minIntervalMs: 1000 } })

NodeRuntime.runMain(
  Effect.flatMap(
    loadConfig(process.argv.slice(2), process.env),
    (config) => Layer.launch(ServiceLive(app, withSecondSchedules(config)))
  )
)
