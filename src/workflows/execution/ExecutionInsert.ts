import type { SqlClient } from "@effect/sql"
import { type Execution, json } from "./ExecutionRows.js"
import type { makeStaging } from "./ValueRows.js"

/** The columns of a new execution row with `events` first events (its values staged). */
export const executionRow = (staging: ReturnType<typeof makeStaging>, e: Execution, events: number) => ({
  id: e.id,
  workflow_id: e.workflowId,
  workflow_name: e.workflowName,
  // A limited workflow's execution waiting for a slot is stored queued (concurrency/).
  status: e.queuedAt === undefined ? e.status : "queued",
  input: staging.text(e.input),
  context: JSON.stringify(e.context),
  user_json: json(e.user),
  user_id: e.userId ?? null,
  step_index: e.stepIndex,
  step_data: staging.text(e.stepData),
  current_data: e.currentData === undefined ? null : staging.text(e.currentData),
  output: null,
  error: null,
  error_detail: null,
  suspension: null,
  resume_data: null,
  metadata: JSON.stringify(e.metadata),
  version: e.version,
  owner: e.owner ?? null,
  last_seq: events,
  definition_hash: e.definitionHash ?? null,
  replay_of: e.replayOf ?? null,
  replay_from: e.replayFrom ?? null,
  webhook_url: e.webhookUrl ?? null,
  created_at: e.createdAt,
  updated_at: e.updatedAt,
  ended_at: null,
  history_bytes: staging.historyBytes(),
  stored_bytes: staging.storedBytes(),
  concurrency_key: e.concurrencyKey ?? null,
  queued_at: e.queuedAt ?? null
})

/**
 * The INSERT of a new execution row with `events` first events (its values staged), returning
 * `last_seq`; nothing when the id is taken. Shared by a request's start and a schedule's firing.
 */
export const insertExecution = (
  sql: SqlClient.SqlClient,
  staging: ReturnType<typeof makeStaging>,
  e: Execution,
  events: number
) =>
  sql`INSERT INTO workflow_executions ${
    sql.insert(executionRow(staging, e, events))
  } ON CONFLICT (id) DO NOTHING RETURNING last_seq`
