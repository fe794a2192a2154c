import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { storeCommitsOrInline } from "../../storage/StoreCommits.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import { type Claim, now } from "../execution/ExecutionRows.js"
import { resolveRows, writeAnswering } from "../execution/ValueRows.js"
import type { RetryCommit } from "./PolicyRun.js"
import type { StepFailed } from "./StepOutcome.js"

/**
 * The committed outputs of inner steps, items and iterations (migration 0021), by path. Values are
 * stored as the other values of an execution are (StoredValues: large parts once, in workflow_values).
 */
export interface InnerOutputs {
  /** The committed entries of an execution whose path starts with `prefix`, by path (stored forms). */
  readonly read: (executionId: string, prefix: string) => Effect.Effect<ReadonlyMap<string, unknown>>
  /**
   * Inserts `entries` with `events`, fenced by the claim (running, at its version and owner): one
   * transaction, shared with other writes (group commit). The number of the last event and the
   * execution's stored bytes after the write, or none when the claim is lost (nothing is written).
   */
  readonly commit: (
    claim: Claim,
    entries: ReadonlyArray<InnerEntry>,
    events: ReadonlyArray<WorkflowEvent>
  ) => Effect.Effect<Option.Option<InnerWritten>>
}

/** What an inner commit answers: its last event's number, and the execution's stored bytes once it committed (issue #42). */
export interface InnerWritten {
  readonly lastSeq: number
  readonly storedBytes: number
}

/** An inner row to write: an output is written once; a `replace` one (an inner step's `#retry` state) overwrites the last. */
export interface InnerEntry {
  readonly path: string
  readonly value: unknown
  readonly replace?: boolean | undefined
}

/** A committed inner step's event: a step-complete from `from` with its `path`. */
export interface InnerEvent {
  readonly from: string
  readonly path: string
  readonly stepType: string
  readonly output: unknown
}

/** What a running step with inner checkpoints gets from the driver (StepEnv.inner). */
export interface InnerCheckpoint {
  /** The stored forms of the step's committed entries, by path (read when the step started). */
  readonly committed: ReadonlyMap<string, unknown>
  /**
   * Commits `entries` (with the event, when given); interrupts the step when the claim is lost, and
   * fails it when the execution's stored bytes are then over workflows.maxExecutionBytes.
   */
  readonly commit: (entries: ReadonlyArray<InnerEntry>, event?: InnerEvent) => Effect.Effect<void, StepFailed>
  /**
   * Commits an inner step's retry (steps/innerPolicy.ts): its state as `<path>#retry`, replacing the
   * last, with its step-retry event; interrupts the step when the claim is lost.
   */
  readonly retry: (from: string, path: string, retry: RetryCommit) => Effect.Effect<void>
  /** The top-level step's index and its workflow's id (of the retry state and its metric). */
  readonly stepIndex: number
  readonly workflowId: string
}

/** What a step runs with when it commits nothing apart (andRace) or has no checkpoint (inside a child workflow). */
export const inMemory = (checkpoint?: Pick<InnerCheckpoint, "stepIndex" | "workflowId">): InnerCheckpoint => ({
  committed: new Map(),
  commit: () => Effect.void,
  retry: () => Effect.void,
  stepIndex: checkpoint?.stepIndex ?? 0,
  workflowId: checkpoint?.workflowId ?? ""
})

/** Whether `path` is one of the step `stepId`'s inner paths (`id[..`, `id/..`, `id#..`). */
export const isInnerPathOf = (stepId: string, path: string) =>
  path.length > stepId.length && path.startsWith(stepId) && "[/#".includes(path[stepId.length])

export const makeInnerOutputs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const submit = yield* storeCommitsOrInline

  /** The rows a claim may still write, as ExecutionStore's `held`. */
  const held = (claim: Claim) =>
    claim.owner === undefined
      ? sql`id = ${claim.id} AND status = 'running' AND version = ${claim.version}`
      : sql`id = ${claim.id} AND status = 'running' AND version = ${claim.version} AND owner = ${claim.owner}`

  const read: InnerOutputs["read"] = (executionId, prefix) =>
    sql<Record<string, unknown>>`SELECT path, output FROM workflow_step_outputs
      WHERE execution_id = ${executionId} AND substr(path, 1, ${prefix.length}) = ${prefix}`.pipe(
      Effect.flatMap((rows) => resolveRows(sql, rows, ["output"], () => executionId)),
      Effect.map((rows) =>
        new Map(rows.map((row) => {
          const output = row.output
          const value = typeof output === "string" ? JSON.parse(output) : (output as { readonly value: unknown }).value
          return [String(row.path), value] as const
        }))
      ),
      Effect.orDie,
      Effect.withTracerEnabled(false)
    )

  const commit: InnerOutputs["commit"] = (claim, entries, events) => {
    const at = events.at(-1)?.timestamp ?? now()
    const write = writeAnswering(submit, claim.id, events, (staging) => {
      // Staged before the UPDATE that counts them.
      const outputs = entries.map((entry) => ({ ...entry, text: staging.output(entry.value) }))
      return [
        // The UPDATE first: it takes the row's lock (Postgres), so the inserts after it see the claim as it
        // commits; each insert is fenced by the claim as well, so a lost claim writes nothing.
        sql`UPDATE workflow_executions SET last_seq = last_seq + ${events.length}, updated_at = ${at},
          ${staging.counted(sql, claim.id)} WHERE ${held(claim)} RETURNING last_seq`,
        ...outputs.map(({ path, replace, text }) =>
          sql`INSERT INTO workflow_step_outputs (execution_id, path, output, created_at)
            SELECT id, ${path}, ${text}, ${at} FROM workflow_executions WHERE ${held(claim)}
            ON CONFLICT (execution_id, path) ${
            replace === true
              ? sql`DO UPDATE SET output = excluded.output, created_at = excluded.created_at`
              : sql`DO NOTHING`
          }`
        ),
        sql`SELECT last_seq, stored_bytes FROM workflow_executions WHERE ${held(claim)}`
      ]
    })
    return Effect.map(
      write,
      Option.map((row) => ({ lastSeq: Number(row.last_seq), storedBytes: Number(row.stored_bytes) }))
    )
  }

  return { read, commit } satisfies InnerOutputs
})
