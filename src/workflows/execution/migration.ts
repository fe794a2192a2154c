import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../../storage/Migrations.js"

/**
 * Executions (the checkpoint: next step, its input, every step's output) and their event log, numbered
 * per execution. JSON is stored as text on both dialects; timestamps as ISO 8601 text.
 */
export const createWorkflowTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_executions (
    id TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    workflow_name TEXT NOT NULL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    context TEXT NOT NULL,
    user_json TEXT,
    step_index INTEGER NOT NULL,
    step_data TEXT NOT NULL,
    current_data TEXT,
    output TEXT,
    error TEXT,
    suspension TEXT,
    resume_data TEXT,
    metadata TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at TEXT
  )`
  yield* sql`CREATE INDEX workflow_executions_by_created ON workflow_executions (created_at)`
  yield* sql`CREATE INDEX workflow_executions_by_workflow ON workflow_executions (workflow_id, created_at)`
  yield* sql`CREATE INDEX workflow_executions_by_status ON workflow_executions (status, created_at)`
  yield* sql`CREATE TABLE workflow_events (
    execution_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (execution_id, seq)
  )`
})

/**
 * Events are numbered from a counter on the execution row, bumped by the same conditional UPDATE that
 * changes the row (see ExecutionStore), instead of `MAX(seq) + 1`, which two writers could both compute.
 */
export const addWorkflowEventCounter = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0`
  yield* sql`UPDATE workflow_executions SET last_seq = COALESCE(
    (SELECT MAX(seq) FROM workflow_events WHERE workflow_events.execution_id = workflow_executions.id), 0)`
})

/**
 * Indexes that cover the execution listing: one per combination of the equality filters (none,
 * workflow, status, both), each followed by the listing's order (created_at DESC, id DESC). A page at
 * any offset is then found by walking one index range with no per-entry test, and only the page's rows
 * are read. They replace the indexes of 0002, which lacked the id tie-break and the id itself, so a
 * deep page read every row before it.
 */
export const createListingIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX workflow_executions_listing ON workflow_executions (created_at, id)`
  yield* sql`CREATE INDEX workflow_executions_listing_by_workflow ON workflow_executions (workflow_id, created_at, id)`
  yield* sql`CREATE INDEX workflow_executions_listing_by_status ON workflow_executions (status, created_at, id)`
  yield* sql`CREATE INDEX workflow_executions_listing_by_workflow_status ON workflow_executions (workflow_id, status, created_at, id)`
  yield* sql`DROP INDEX workflow_executions_by_created`
  yield* sql`DROP INDEX workflow_executions_by_workflow`
  yield* sql`DROP INDEX workflow_executions_by_status`
})

/**
 * Ownership of running executions by instances (issue #11): `owner` names the instance whose fiber
 * runs the execution (NULL when nobody does: suspended, ended, or released on shutdown); `version` is
 * its epoch, bumped by every claim. `workflow_instances` lists the instances that share the store, each
 * with the key of the advisory lock it holds while alive and its last heartbeat (the lease).
 */
export const addExecutionOwners = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN owner TEXT`
  yield* sql`CREATE INDEX workflow_executions_running_by_owner ON workflow_executions (owner) WHERE status = 'running'`
  yield* sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TABLE workflow_instances (
        id TEXT PRIMARY KEY,
        lock_key INTEGER NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        heartbeat_at TIMESTAMPTZ NOT NULL
      )`,
    orElse: () =>
      sql`CREATE TABLE workflow_instances (
        id TEXT PRIMARY KEY,
        lock_key INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
      )`
  })
})

/**
 * Idempotency-Keys of workflow starts: one row per key in its scope (route, workflow, caller), with the
 * hash of the request's body and the id of the execution it stands for, chosen before the execution is
 * stored (a request that finds the key but no execution creates it under that id). `expires_at` orders
 * the background pruning.
 */
export const createIdempotencyKeys = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_idempotency_keys (
    route TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    caller TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    PRIMARY KEY (route, workflow_id, caller, idempotency_key)
  )`
  yield* sql`CREATE INDEX workflow_idempotency_keys_by_expiry ON workflow_idempotency_keys (expires_at)`
})

/**
 * The user who started each execution (issue #12; `owner` is the instance running it), and the
 * listing indexes of 0006 led by it, so a user's listing stays an index walk.
 */
export const addExecutionUsers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN user_id TEXT`
  yield* sql`CREATE INDEX workflow_executions_listing_by_user ON workflow_executions (user_id, created_at, id)`
  yield* sql`CREATE INDEX workflow_executions_listing_by_user_workflow ON workflow_executions (user_id, workflow_id, created_at, id)`
})

/**
 * The hash of the workflow definition (top-level step ids and types) each execution was started or
 * last continued under (see DefinitionCompatibility). Existing rows keep NULL: unknown.
 */
export const addDefinitionHashes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN definition_hash TEXT`
})

/**
 * Values stored once (issue #27, see StoredValues): the large parts of an execution's values, keyed by
 * execution and the hash of their text, which events and checkpoints refer to; and `history_bytes`,
 * the size of the execution's events as JSON (what a reader of them receives), which bounds an
 * execution and tells the listing which records it shows whole. Existing rows get the size of the
 * events they hold.
 */
export const addWorkflowValues = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_values (
    execution_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (execution_id, hash)
  )`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN history_bytes BIGINT NOT NULL DEFAULT 0`
  const bytes = sql.onDialectOrElse({
    pg: () => sql`octet_length(event)`,
    orElse: () => sql`length(CAST(event AS BLOB))`
  })
  yield* sql`UPDATE workflow_executions SET history_bytes = COALESCE(
    (SELECT SUM(${bytes}) FROM workflow_events WHERE workflow_events.execution_id = workflow_executions.id), 0)`
})

/** The tag, message and fields of the error an execution ended with (issue #30); existing rows keep NULL. */
export const addErrorDetails = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN error_detail TEXT`
})

/**
 * Step retries (issue #31): the attempt the current step is at (`step_attempt`, for the step named by
 * `step_attempt_key`, "index:id"), its first attempt's start, the due time of the next attempt and the
 * errors of the failed attempts (what the retry schedule is stepped with again after a crash).
 * Existing rows keep NULL: no retry under way.
 */
export const addStepAttempts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN step_attempt INTEGER`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN step_attempt_key TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN step_first_attempt_at TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN step_retry_at TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN step_retry_errors TEXT`
})

/**
 * The path of an inner step's event (issue #31): NULL on a top-level step's. A listing shows only the
 * top-level events; inner ones are read by page (GET …/executions/:executionId/events).
 */
export const addEventPaths = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_events ADD COLUMN path TEXT`
})

/**
 * Durable timers (issue #31): a parked execution is `status = 'sleeping'` (a state the orphan claim does
 * not match) with `wake_at` (ISO text, set only while parked), found by the timer service from a partial
 * index; `sleep` holds the committed wake time of the step it sleeps in (`{ stepId, wakeAt }`), kept so
 * that a resumed or recovered sleep never evaluates its time again.
 */
export const addWorkflowTimers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN wake_at TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN sleep TEXT`
  yield* sql`CREATE INDEX workflow_executions_wake ON workflow_executions (wake_at) WHERE status = 'sleeping'`
})

/**
 * Inner steps' outputs (issue #31): one row per committed inner step, item or iteration of a step
 * (path `measure/upper`, `lines[3]`), written fenced by the claim with its event, read back when the
 * execution goes on so committed inner work is not run again, deleted with the execution.
 */
export const createStepOutputs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_step_outputs (
    execution_id TEXT NOT NULL,
    path TEXT NOT NULL,
    output TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (execution_id, path)
  )`
})

/**
 * Replays (issue #33): a replay's row names the execution it replays (`replay_of`) and the step it ran
 * from (`replay_from`); the replays of an execution are found by the index, so the original's row is
 * never written (no race between concurrent replays of one execution). Existing rows keep NULL.
 */
export const addReplayLinks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN replay_of TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN replay_from TEXT`
  yield* sql`CREATE INDEX workflow_executions_replays ON workflow_executions (replay_of, created_at)`
})

/**
 * What each execution stores (issue #42, settled 7): `stored_bytes`, its events and inner step outputs
 * as stored and its value rows (each once), bounded by workflows.maxExecutionBytes and kept by every
 * write (ValueRows' `counted`). Existing rows get what they store now.
 */
export const addStoredBytes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN stored_bytes BIGINT NOT NULL DEFAULT 0`
  const bytes = (column: string) =>
    sql.onDialectOrElse({
      pg: () => sql`octet_length(${sql(column)})`,
      orElse: () => sql`length(CAST(${sql(column)} AS BLOB))`
    })
  const of = (table: string, column: string) =>
    sql`COALESCE((SELECT SUM(${bytes(column)}) FROM ${sql(table)} WHERE ${
      sql(table)
    }.execution_id = workflow_executions.id), 0)`
  yield* sql`UPDATE workflow_executions SET stored_bytes =
    ${of("workflow_events", "event")} + ${of("workflow_step_outputs", "output")} + ${of("workflow_values", "value")}`
})

/**
 * Each event's size as JSON read back, its values inline (issue #42): a re-attach reads a page by
 * bytes, and must know them before it reads the values. Existing rows keep NULL (see EventPages.ts).
 */
export const addEventBytes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_events ADD COLUMN bytes BIGINT`
})

/** This feature's migrations (its half of 0013 is joined with agent memory's at src/Database.ts). */
export const workflowMigrations: Record<string, Migration> = {
  "0002_workflow_executions": createWorkflowTables,
  "0004_workflow_event_counter": addWorkflowEventCounter,
  "0006_workflow_listing_indexes": createListingIndexes,
  "0009_workflow_execution_owners": addExecutionOwners,
  "0010_workflow_idempotency_keys": createIdempotencyKeys,
  "0016_workflow_definition_hash": addDefinitionHashes,
  "0018_workflow_values": addWorkflowValues,
  "0019_workflow_error_detail": addErrorDetails,
  "0020_workflow_timers": addWorkflowTimers,
  "0021_workflow_step_outputs": createStepOutputs,
  "0022_workflow_step_attempts": addStepAttempts,
  "0023_workflow_event_paths": addEventPaths,
  "0027_workflow_replays": addReplayLinks,
  "0031_workflow_stored_bytes": addStoredBytes,
  "0032_workflow_event_bytes": addEventBytes
}
