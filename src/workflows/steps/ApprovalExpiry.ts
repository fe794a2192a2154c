import { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import type { DueWorkService } from "../../scheduling/DueWork.js"
import type { WorkflowDefinition } from "../definition/WorkflowDefinition.js"
import { continueAt, definitionHash } from "../execution/DefinitionCompatibility.js"
import type { ExecutionDriver } from "../execution/ExecutionDriver.js"
import { ExecutionStore } from "../execution/ExecutionStore.js"
import { claimResumeRetrying } from "../execution/storeRetry.js"
import { answersApprovals, expiredResumeData } from "./agentApprovals.js"

/** The due-work kind of approvals a suspended execution waits on (issue #32, settled 5). */
export const APPROVAL_EXPIRY_KIND = "workflow-approval-expiry"

/**
 * An execution suspended on an andAgent step's approvals keeps their first expiry in `wake_at` (a
 * sleeper's column; a suspended row's is set only for this). When it comes, the due-work scheduler
 * resumes the execution with every approval denied as expired, through the same conditional resume a
 * client's answer takes: whichever comes first wins, the other finds it no longer suspended.
 */
export const startApprovalExpiry = (options: {
  readonly driver: ExecutionDriver
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
  readonly leaving: Effect.Effect<boolean>
  readonly dueWork: DueWorkService
  readonly instanceId: string
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* ExecutionStore
    const { driver } = options
    const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(Effect.orDie, Effect.withTracerEnabled(false))

    const nextDue = sql<{ next: string | null }>`SELECT MIN(wake_at) AS next FROM workflow_executions
      WHERE status = 'suspended' AND wake_at IS NOT NULL`.pipe(
      Effect.map((rows) => {
        const next = rows.at(0)?.next
        return next == null ? Option.none() : Option.some(Date.parse(next))
      }),
      untraced
    )

    // Taken by the resume's conditional claim (`handle`), not here: a due row is read by every instance,
    // resumed by one.
    const claimDue = (limit: number) =>
      Effect.flatMap(options.leaving, (leaving) =>
        leaving || driver.isDraining()
          ? Effect.succeed([])
          : sql<{ id: string }>`SELECT id FROM workflow_executions WHERE status = 'suspended' AND wake_at IS NOT NULL
            AND wake_at <= ${new Date().toISOString()} ORDER BY wake_at LIMIT ${limit}`.pipe(
            Effect.map((rows) => rows.map((row) => row.id)),
            untraced
          ))

    /** A due time that answers nothing (the workflow or its step changed since): forgotten. */
    const forget = (id: string, version: number) =>
      sql`UPDATE workflow_executions SET wake_at = NULL WHERE id = ${id} AND status = 'suspended' AND version = ${version}`
        .pipe(untraced)

    const handle = (id: string) =>
      Effect.gen(function*() {
        const found = yield* store.get(id)
        if (Option.isNone(found) || found.value.status !== "suspended" || found.value.suspension === undefined) return
        const execution = found.value
        const suspension = found.value.suspension
        const definition = options.workflows.get(execution.workflowId)
        const at = definition === undefined ? undefined : continueAt(definition, execution, suspension)
        if (
          definition === undefined || at === undefined || Either.isLeft(at) ||
          !answersApprovals(definition.steps[at.right.stepIndex], suspension)
        ) {
          return yield* forget(id, execution.version)
        }
        const hash = definitionHash(definition)
        const claimed = yield* claimResumeRetrying(store, execution, {
          stepIndex: at.right.stepIndex,
          resumeData: expiredResumeData(suspension),
          owner: options.instanceId,
          definitionHash: hash
        })
        if (Option.isNone(claimed)) return
        yield* Effect.logInfo(`workflow approvals expired at ${suspension.stepId}: denied`)
        yield* driver.launch(definition, claimed.value, {
          startRecorded: false,
          checked: hash !== execution.definitionHash
        })
      }).pipe(Effect.annotateLogs({ executionId: id }))

    yield* options.dueWork.register<string>({ name: APPROVAL_EXPIRY_KIND, nextDue, claimDue, handle })
  })
