import { SqlClient } from "@effect/sql"
import { Effect, Either, Metric, Option, Schema, Tracer } from "effect"
import { workflowTimerLateness, workflowTimersParked } from "../../observability/metrics/instruments.js"
import { DueWork, type DueWorkService, makeDueWork } from "../../scheduling/DueWork.js"
import { storeCommitsOrInline } from "../../storage/StoreCommits.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import type { WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { continueAt, definitionHash } from "../execution/DefinitionCompatibility.js"
import type { ExecutionDriver, Park } from "../execution/ExecutionDriver.js"
import { workflowEvent } from "../execution/ExecutionEndings.js"
import {
  type Claim,
  type Execution,
  ExecutionFromRow,
  now,
  type SleepRecord,
  VALUE_COLUMNS
} from "../execution/ExecutionRows.js"
import { ExecutionStore } from "../execution/ExecutionStore.js"
import { resolveRows, writeWithEvents } from "../execution/ValueRows.js"
import { WAKE_LEAD_MS } from "./Sleep.js"

/** The due-work kind of workflow timers. */
export const TIMER_KIND = "workflow-timer"

/** The statements of workflow timers, on the execution row (migration 0020). */
const makeTimerStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const submit = yield* storeCommitsOrInline
  const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(Effect.orDie, Effect.withTracerEnabled(false))

  /**
   * A held execution parked at the sleep step `index`: sleeping (no owner, a new version: the claim is
   * spent), with its wake time and the step-sleep event, in one conditional write.
   */
  const park = (claim: Claim, index: number, sleep: SleepRecord, event: WorkflowEvent) =>
    writeWithEvents(submit, claim.id, [event], (staging) => [
      sql`UPDATE workflow_executions SET status = 'sleeping', wake_at = ${sleep.wakeAt}, sleep = ${
        JSON.stringify(sleep)
      },
        owner = NULL, version = version + 1, last_seq = last_seq + 1, updated_at = ${event.timestamp},
        ${staging.counted(sql, claim.id)}
        WHERE id = ${claim.id} AND status = 'running' AND version = ${claim.version} AND owner = ${claim.owner ?? null}
        AND step_index = ${index} RETURNING last_seq`
    ])

  /** The earliest wake time and the number parked. */
  const nextDue = sql<{ next: string | null; parked: number | string }>`SELECT MIN(wake_at) AS next, COUNT(*) AS parked
    FROM workflow_executions WHERE status = 'sleeping'`.pipe(
    Effect.map((rows) => {
      const row = rows.at(0)
      return { next: row?.next ?? undefined, parked: Number(row?.parked ?? 0) }
    }),
    untraced
  )

  // Due-ness by the database's clock on Postgres (ISO text, as wake_at is stored), the process's on SQLite;
  // due within the wake lead (the woken step waits the rest in memory: steps/Sleep.ts).
  const dueBy = () =>
    sql.onDialectOrElse({
      pg: () =>
        sql`to_char((now() + interval '${
          sql.literal(`${WAKE_LEAD_MS} milliseconds`)
        }') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
      orElse: () => sql`${new Date(Date.now() + WAKE_LEAD_MS).toISOString()}`
    })

  const decodeExecutions = Schema.decodeUnknown(Schema.Array(ExecutionFromRow))
  /** Takes due sleepers for `owner`: one conditional statement (a sleeper is taken once, whoever asks). */
  const claimDue = (owner: string, limit: number) =>
    submit({
      statements: [
        sql`UPDATE workflow_executions SET status = 'running', owner = ${owner}, wake_at = NULL, version = version + 1,
        updated_at = ${now()}
        WHERE id IN (
          SELECT id FROM workflow_executions WHERE status = 'sleeping' AND wake_at <= ${dueBy()}
          ORDER BY wake_at LIMIT ${limit}${
          sql.onDialectOrElse({ pg: () => sql` FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })
        }
        ) AND status = 'sleeping' RETURNING *`.compile()
      ]
    }).pipe(
      Effect.flatMap((rows) => resolveRows(sql, rows, VALUE_COLUMNS, (row) => String(row.id))),
      Effect.flatMap(decodeExecutions),
      Effect.orDie
    )

  return { park, nextDue, claimDue }
})

/**
 * Workflow timers on the app's due-work scheduler (its own one when the app has none, as in tests that
 * build the engine alone): `park` for the driver, then `start` once the driver exists.
 */
export const makeWorkflowTimers = (instanceId: string, pollMs: number) =>
  Effect.gen(function*() {
    const store = yield* makeTimerStore
    const executions = yield* ExecutionStore
    const provided = yield* Effect.serviceOption(DueWork)
    const dueWork: DueWorkService = Option.isSome(provided)
      ? provided.value
      : yield* makeDueWork({ instanceId, pollMs })

    const park: Park = ({ checkpoint, claim, execution, index, signal, step }) =>
      Effect.gen(function*() {
        // A child workflow's sleep: the event is its step's, with its path, as inner events are.
        const { path } = signal
        const event = workflowEvent(execution, "step-sleep", path === undefined ? step.id : signal.stepId, "running", {
          stepIndex: index,
          stepType: step.type,
          wakeAt: signal.wakeAt,
          ...(path === undefined ? {} : { path })
        })
        const sleep: SleepRecord = { stepId: step.id, wakeAt: signal.wakeAt, ...(path === undefined ? {} : { path }) }
        const stored = yield* checkpoint([event], store.park(claim, index, sleep, event))
        if (Option.isNone(stored)) return
        yield* dueWork.parked(TIMER_KIND, Date.parse(signal.wakeAt))
        yield* Effect.logInfo(`workflow sleeps at ${path ?? step.id} until ${signal.wakeAt}`)
      })

    const start = (options: {
      readonly driver: ExecutionDriver
      readonly workflows: ReadonlyMap<string, WorkflowDefinition>
      readonly leaving: Effect.Effect<boolean>
    }) => {
      const { driver } = options
      /** Launches a woken execution from its checkpoint (at its sleep step, by id when the workflow changed). */
      const wake = (execution: Execution) =>
        Effect.gen(function*() {
          const wakeAt = execution.sleep === undefined ? Date.now() : Date.parse(execution.sleep.wakeAt)
          yield* Metric.update(workflowTimerLateness, Math.max(0, Date.now() - Math.max(wakeAt, dueWork.readyAt)))
          const definition = options.workflows.get(execution.workflowId)
          if (definition === undefined) {
            return yield* driver.fail(execution, execution, `workflow ${execution.workflowId} is not registered`)
          }
          const checked = execution.definitionHash !== definitionHash(definition)
          let woken = execution
          if (checked) {
            const at = continueAt(definition, execution, {
              stepIndex: execution.stepIndex,
              stepId: execution.sleep?.stepId
            })
            if (Either.isLeft(at)) {
              return yield* driver.fail(execution, execution, `cannot wake: ${at.left.message}`)
            }
            if (!(yield* executions.rebase(execution, at.right))) return
            woken = { ...execution, ...at.right }
          }
          yield* driver.launch(definition, woken, { startRecorded: true, checked, woken: true })
        }).pipe(
          Effect.annotateLogs({ workflowId: execution.workflowId, executionId: execution.id }),
          Effect.withSpan(`workflow.wake ${execution.workflowId}`, {
            root: true,
            captureStackTrace: false,
            links: execution.metadata.traceId === ""
              ? []
              : [{
                _tag: "SpanLink" as const,
                span: Tracer.externalSpan({ traceId: execution.metadata.traceId, spanId: execution.metadata.spanId }),
                attributes: {}
              }],
            attributes: { "entity.type": "workflow", "entity.id": execution.workflowId, "execution.id": execution.id }
          })
        )

      return dueWork.register<Execution>({
        name: TIMER_KIND,
        leadMs: WAKE_LEAD_MS,
        nextDue: Effect.flatMap(store.nextDue, ({ next, parked }) =>
          Effect.as(
            Metric.set(workflowTimersParked, parked),
            next === undefined ? Option.none() : Option.some(Date.parse(next))
          )),
        claimDue: (limit) =>
          Effect.flatMap(options.leaving, (leaving) =>
            leaving || driver.isDraining() ? Effect.succeed([]) : store.claimDue(instanceId, limit)),
        handle: wake
      })
    }

    return { park, start, dueWork }
  })
