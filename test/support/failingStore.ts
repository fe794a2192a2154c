import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Layer, Record, Redacted, Ref } from "effect"
import { AgentRegistryLive, RegisteredAgents } from "../../src/agents/AgentRegistry.js"
import { ApprovalStoreLive } from "../../src/agents/approvals/ApprovalStore.js"
import { MemoryStoreLive } from "../../src/agents/memory/MemoryStore.js"
import { DefaultModelLive } from "../../src/agents/models/DefaultModel.js"
import { WorkingMemoryStoreLive } from "../../src/agents/workingMemory/WorkingMemoryStore.js"
import { resolveServerConfig, ServerConfig } from "../../src/config/ServerConfig.js"
import { DatabaseLive } from "../../src/Database.js"
import { StoreCommitsLive } from "../../src/storage/StoreCommits.js"
import type { WorkflowDefinition } from "../../src/workflows/definition/Workflow.js"
import { RegisteredWorkflows, WorkflowEngineLive } from "../../src/workflows/engine/WorkflowEngine.js"
import { ExecutionStore } from "../../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive } from "../../src/workflows/execution/ExecutionStoreLive.js"

type Store = ExecutionStore["Type"]
export type StoreOperation = keyof Store

/**
 * A failure of one operation of the store, as the real one fails: a defect carrying an SqlError.
 * `before`: the write never reached the database (its transaction rolled back). `after`: it committed
 * and its answer was lost (the connection or the commit thread died).
 */
export interface Fault {
  readonly operation: StoreOperation
  /** Calls that go through first: `{ operation: "advance", pass: 1 }` fails the second checkpoint. */
  readonly pass?: number
  /** Calls that fail then; Infinity: the operation stays down until `heal`. */
  readonly times?: number
  readonly when?: "before" | "after"
}

export class StoreFaults extends Context.Tag("test/StoreFaults")<StoreFaults, {
  readonly inject: (fault: Fault) => Effect.Effect<void>
  /** Every fault dropped: the store answers again. */
  readonly heal: Effect.Effect<void>
}>() {}

type Armed = Required<Fault>

/** What the next call of `operation` does, and the faults left once it is counted. */
const nextCall =
  (operation: StoreOperation) => (faults: ReadonlyArray<Armed>): [Armed["when"] | "pass", ReadonlyArray<Armed>] => {
    const fault = faults.find((armed) => armed.operation === operation)
    if (fault === undefined) return ["pass", faults]
    const counted = fault.pass > 0 ? { ...fault, pass: fault.pass - 1 } : { ...fault, times: fault.times - 1 }
    const left = counted.times > 0
      ? faults.map((armed) => (armed === fault ? counted : armed))
      : faults.filter((armed) => armed !== fault)
    return [fault.pass > 0 ? "pass" : fault.when, left]
  }

/**
 * The real ExecutionStore (on whatever database the layer is given) with faults on cue: every call
 * goes to it, except those an armed fault makes fail.
 */
export const FailingExecutionStoreLive = Layer.effectContext(Effect.gen(function*() {
  const real = yield* ExecutionStore
  const faults = yield* Ref.make<ReadonlyArray<Armed>>([])
  const failure = (operation: StoreOperation) => Effect.die(new SqlError({ message: `injected: ${operation} failed` }))
  const guarded = (operation: StoreOperation, call: Effect.Effect<unknown>) =>
    Effect.flatMap(
      Ref.modify(faults, nextCall(operation)),
      (outcome) =>
        outcome === "pass"
          ? call
          : outcome === "before"
          ? failure(operation)
          : Effect.zipRight(call, failure(operation))
    )
  // Every operation answers an Effect without a typed error: one wrapper fits them all.
  const operations = real as unknown as Record<
    StoreOperation,
    (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown>
  >
  const wrapped = Record.map(
    operations,
    (call, operation) => (...args: ReadonlyArray<unknown>) => guarded(operation, call(...args))
  )
  return Context.make(ExecutionStore, wrapped as unknown as Store).pipe(Context.add(StoreFaults, {
    inject: ({ operation, pass = 0, times = 1, when = "before" }) =>
      Ref.update(faults, (armed) => [...armed, { operation, pass, times, when }]),
    heal: Ref.set(faults, [])
  }))
})).pipe(Layer.provide(ExecutionStoreLive))

/**
 * A WorkflowEngine over the failing store, on the SQLite or Postgres database at `databaseUrl`, built
 * as ServicesLive builds it (ServicesLive has no seam to swap its ExecutionStore).
 */
export const engineOnFailingStore = (workflows: ReadonlyArray<WorkflowDefinition>, databaseUrl: string) => {
  const config = { ...resolveServerConfig({}, {}), port: 0, databaseUrl: Redacted.make(databaseUrl) }
  return WorkflowEngineLive.pipe(
    Layer.provideMerge(AgentRegistryLive),
    Layer.provideMerge(
      Layer.mergeAll(
        FailingExecutionStoreLive,
        MemoryStoreLive,
        WorkingMemoryStoreLive,
        ApprovalStoreLive,
        DefaultModelLive(config.model)
      )
    ),
    Layer.provideMerge(StoreCommitsLive(databaseUrl)),
    Layer.provideMerge(DatabaseLive(databaseUrl)),
    Layer.provideMerge(Layer.mergeAll(
      Layer.succeed(ServerConfig, config),
      Layer.succeed(RegisteredWorkflows, workflows),
      Layer.succeed(RegisteredAgents, [])
    ))
  )
}
