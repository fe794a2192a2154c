import { expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Option, Queue, Stream } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import type { WorkflowEvent } from "../src/workflows/api/WorkflowSchemas.js"
import { FOLLOWER_BUFFER, makeExecutionHubs } from "../src/workflows/execution/ExecutionHubs.js"
import { ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive } from "../src/workflows/execution/ExecutionStoreLive.js"
import { makeExecutionWatch } from "../src/workflows/execution/ExecutionWatch.js"
import { testEvent, testExecution } from "./support/executions.js"
import { tempDir } from "./support/TestServer.js"

/**
 * A follower that stops reading holds a bounded number of events; when it reads again, the events it
 * lost come from the store, in order and once, up to the settling one.
 */

const event = (type: WorkflowEvent["type"]) => testEvent("f", type)
const execution = testExecution("f", { owner: "me" })

it.scopedLive(
  "a follower that stops reading holds a bounded buffer and still gets every event, in order, once",
  () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "follow.db")}`
      const context = yield* Layer.build(ExecutionStoreLive.pipe(Layer.provideMerge(DatabaseLive(url))))
      const store = Context.get(context, ExecutionStore)
      const hubs = yield* makeExecutionHubs
      const watch = yield* makeExecutionWatch(hubs).pipe(Effect.provideService(ExecutionStore, store))

      const opening = [event("workflow-start"), event("step-start")]
      yield* store.create(execution, opening)
      const known = { ...execution, lastSeq: 2 }
      const pull = yield* Stream.toPull(watch.follow(known, 0, Effect.succeed(Option.none())))
      // Stored events come one a pull (a page is given one event at a time).
      const first = [...Chunk.toReadonlyArray(yield* pull), ...Chunk.toReadonlyArray(yield* pull)]
      expect(first.map((update) => update.seq)).toEqual([1, 2])

      // The follower does not read while 3,000 events are stored and published, the last one settling.
      const claim = { id: "f", version: 0, owner: "me" }
      const watcher = yield* hubs.subscribe("f", 2)
      for (let i = 0; i < 3_000; i++) {
        const events = [i === 2_999 ? event("workflow-complete") : event("step-complete")]
        const seq = Option.getOrThrow(
          i === 2_999
            ? yield* store.finish(claim, { status: "completed", output: {} }, events[0])
            : yield* store.append(claim, events)
        )
        yield* hubs.publish("f", { seq, event: events[0] })
      }
      expect(yield* Queue.size(watcher)).toBeLessThanOrEqual(FOLLOWER_BUFFER)

      const rest: Array<number> = []
      for (;;) {
        const chunk = yield* Effect.option(pull)
        if (Option.isNone(chunk)) break
        rest.push(...Chunk.toReadonlyArray(chunk.value).map((update) => update.seq))
      }
      // Every event from 3 to 3,002 once and in order, then the result frame (numbered after the last).
      expect(rest).toEqual([...Array.from({ length: 3_000 }, (_, i) => i + 3), 3_003])
    }),
  60_000
)
