import { Effect, Either, Schedule, Stream } from "effect"
import { countTakeover } from "../../observability/metrics/instruments.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"
import { continueAt, definitionHash, runningStepId } from "./DefinitionCompatibility.js"
import type { ExecutionDriver } from "./ExecutionDriver.js"
import type { ExecutionHubs } from "./ExecutionHubs.js"
import type { ExecutionNotices, Notice } from "./ExecutionNotices.js"
import { type Execution, ExecutionStore } from "./ExecutionStore.js"
import type { InstanceRegistry } from "./InstanceRegistry.js"
import { makeStrandedRows } from "./StrandedRows.js"

/** Orphans claimed per statement. */
const CLAIM_BATCH = 100
/** Executions checked or fetched per statement. */
const CHECK_BATCH = 500
/** The latest events searched for the step a running execution of a changed workflow stands at. */
const STEP_EVENTS = 8
/** How long a row held here must stay unwritten, at least, before it counts as stranded: four leases (a minute by default). */
const strandedAfter = (leaseMs: number) => Math.max(4 * leaseMs, 10_000)

const chunks = <A>(items: ReadonlyArray<A>, size: number): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/**
 * Keeps this instance's share of the running executions right, with the store as the truth:
 * - claims orphans (running with no owner, or an owner that is not live) and runs them from their
 *   checkpoint: at start-up (on SQLite every execution left running, its process being gone), then on
 *   every poll and whenever another instance releases some;
 * - stops a fiber whose execution was taken from it (suspended or cancelled elsewhere, or claimed by
 *   another instance after this one's lease ran out): its writes would be refused anyway;
 * - brings events stored by other instances to the streams and waiters here.
 * Notices from the others make this immediate; the poll catches a lost one. On SQLite only the
 * start-up claim runs: nobody else shares the store.
 */
export const startExecutionSupervisor = (options: {
  readonly registry: InstanceRegistry
  readonly notices: ExecutionNotices
  readonly hubs: ExecutionHubs
  readonly driver: ExecutionDriver
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
  readonly pollMs: number
  readonly leaseMs: number
  /** Whether the instance is on its way out (it claims nothing more). */
  readonly leaving: Effect.Effect<boolean>
}) =>
  Effect.gen(function*() {
    const { driver, hubs, notices, registry } = options
    const store = yield* ExecutionStore
    const strandedRows = yield* makeStrandedRows

    /**
     * Launches a claimed execution from its checkpoint. When its workflow changed since (or it predates
     * definition hashes), it goes on at the step with the id it stood at, moved to that step's index;
     * when that step is gone it fails instead of running whatever step now has its index.
     */
    const adopt = (execution: Execution) =>
      Effect.gen(function*() {
        const definition = options.workflows.get(execution.workflowId)
        if (definition === undefined) {
          return yield* driver.fail(execution, execution, `workflow ${execution.workflowId} is not registered`)
        }
        let adopted = execution
        // Under a changed definition the step may have another predecessor now: its data must fit (StepCodec).
        const checked = execution.definitionHash !== definitionHash(definition)
        if (checked) {
          const latest = yield* store.events(execution.id, Math.max(0, execution.lastSeq - STEP_EVENTS))
          const stepId = runningStepId(execution.stepIndex, latest)
          const at = continueAt(definition, execution, { stepIndex: execution.stepIndex, stepId })
          if (Either.isLeft(at)) {
            return yield* driver.fail(execution, execution, `cannot recover: ${at.left.message}`)
          }
          if (!(yield* store.rebase(execution, at.right))) return
          adopted = { ...execution, ...at.right }
        }
        yield* countTakeover
        yield* Effect.logInfo("recovering workflow execution")
        yield* driver.launch(definition, adopted, { startRecorded: false, checked, recovered: true })
      }).pipe(Effect.annotateLogs({ workflowId: execution.workflowId, executionId: execution.id }))

    const claimOrphans: Effect.Effect<void> = Effect.gen(function*() {
      while (!driver.isDraining() && !(yield* options.leaving)) {
        const taken = yield* store.claimOrphans(registry.instanceId, {
          limit: CLAIM_BATCH,
          liveOwners: registry.liveOwners
        })
        // Claim and launch together: a claimed execution always has a fiber.
        yield* Effect.uninterruptible(Effect.forEach(taken, adopt, { discard: true }))
        if (taken.length < CLAIM_BATCH) return
      }
    })

    /**
     * Rows the store says this instance runs while it holds no fiber for them (a claim whose answer a
     * connection reset lost): released, for the orphan claim that follows (here or elsewhere). Only rows
     * unwritten for four leases, checked as often, and the fibers read after the rows: a claim on its
     * way to its launch is never taken for one.
     */
    const strandedAfterMs = strandedAfter(options.leaseMs)
    let strandedCheckedAt = Date.now()
    const releaseStranded = Effect.gen(function*() {
      if (Date.now() - strandedCheckedAt < strandedAfterMs || driver.isDraining() || (yield* options.leaving)) return
      strandedCheckedAt = Date.now()
      const rows = yield* strandedRows(registry.instanceId, new Date(Date.now() - strandedAfterMs).toISOString())
      const claims = driver.claims()
      for (const row of rows) {
        if (claims.has(row.id) || !(yield* store.release({ ...row, owner: registry.instanceId }))) continue
        yield* Effect.logWarning(
          "workflow execution held here with no fiber (a claim's answer was lost): released to be taken over"
        ).pipe(
          Effect.annotateLogs({ executionId: row.id })
        )
      }
    })

    /** Stops the fibers (among `ids`, or all) whose execution is no longer held as they hold it. */
    const stopLost = (ids?: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const claims = driver.claims()
        const held = ids === undefined ? Array.from(claims.keys()) : ids.filter((id) => claims.has(id))
        for (const batch of chunks(held, CHECK_BATCH)) {
          const holders = new Map((yield* store.holders(batch)).map((holder) => [holder.id, holder]))
          for (const id of batch) {
            const claim = claims.get(id)
            const holder = holders.get(id)
            if (claim === undefined) continue
            const kept = holder !== undefined && holder.status === "running" && holder.owner === claim.owner &&
              holder.version === claim.version
            if (!kept) {
              yield* Effect.logInfo("workflow execution taken elsewhere: stopping its fiber here").pipe(
                Effect.annotateLogs({ executionId: id })
              )
              yield* driver.stopIfHeld(id, claim.version)
            }
          }
        }
      })

    /** Publishes the events stored since the last one known here, for these executions if listened to here. */
    const fetchEvents = (ids: ReadonlyArray<string>) =>
      Effect.forEach(ids, (id) => {
        const seen = hubs.seenOf(id)
        return seen === undefined
          ? Effect.void
          : Effect.flatMap(store.events(id, seen), (events) => hubs.publishFetched(id, events))
      }, { discard: true })

    /** The same for every execution listened to here, reading events only of those with new ones. */
    const fetchAllEvents = Effect.gen(function*() {
      const watched = hubs.watched()
      for (const batch of chunks(Array.from(watched.keys()), CHECK_BATCH)) {
        const changed = (yield* store.holders(batch)).filter((holder) =>
          holder.lastSeq > (watched.get(holder.id) ?? holder.lastSeq)
        )
        yield* fetchEvents(changed.map((holder) => holder.id))
      }
    })

    const survive = (what: string) => <A>(effect: Effect.Effect<A>) =>
      Effect.catchAllCause(effect, (cause) =>
        Effect.logWarning(`workflow supervisor: ${what} failed; the next poll retries`, cause))

    const onNotice = (notice: Notice) =>
      notice.kind === "released"
        ? claimOrphans.pipe(survive("claiming released executions"))
        : Effect.zipRight(stopLost(notice.ids), fetchEvents(notice.ids)).pipe(survive("following a notice"))

    const poll = Effect.all([stopLost(), fetchAllEvents, releaseStranded, claimOrphans], { discard: true }).pipe(
      survive("polling")
    )

    yield* claimOrphans
    if (registry.shared) {
      yield* Stream.runForEach(notices.incoming, onNotice).pipe(Effect.interruptible, Effect.forkScoped)
      yield* poll.pipe(Effect.repeat(Schedule.spaced(options.pollMs)), Effect.interruptible, Effect.forkScoped)
    }
  })
