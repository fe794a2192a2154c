import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { join } from "node:path"
import { serviceMigrations as migrations } from "../src/Database.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

const BEFORE_EVENT_COUNTER = ["0001_agent_memory", "0002_workflow_executions", "0003_observability_spans"]

const event = (type: string, from: string, status: string, extra: object = {}) =>
  JSON.stringify({ type, executionId: "old-1", from, timestamp: "2026-01-01T00:00:00.000Z", status, ...extra })

it.scoped(
  "an execution suspended by the previous version resumes after the upgrade; its events go on from the stored numbers",
  () =>
    Effect.gen(function*() {
      const filename = join(yield* tempDir, "service.db")
      // The database as the version before migration 0004 left it: a suspended approval with 5 events.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrator.make({})({
          loader: Migrator.fromRecord(Object.fromEntries(BEFORE_EVENT_COUNTER.map((name) => [name, migrations[name]])))
        })
        const at = "2026-01-01T00:00:00.000Z"
        yield* sql`INSERT INTO workflow_executions ${
          sql.insert({
            id: "old-1",
            workflow_id: "approval",
            workflow_name: "Approval",
            status: "suspended",
            input: JSON.stringify({ amount: 500 }),
            context: "{}",
            user_json: null,
            step_index: 1,
            step_data: JSON.stringify({ check: { amount: 500, needsApproval: true } }),
            current_data: JSON.stringify({ amount: 500, needsApproval: true }),
            output: null,
            error: null,
            suspension: JSON.stringify({
              suspendedAt: at,
              reason: "manager approval required",
              stepIndex: 1,
              stepId: "manager-approval"
            }),
            resume_data: null,
            metadata: JSON.stringify({ traceId: "", spanId: "" }),
            version: 1,
            created_at: at,
            updated_at: at,
            ended_at: null
          })
        }`
        const events = [
          event("workflow-start", "Approval", "running"),
          event("step-start", "check", "running"),
          event("step-complete", "check", "success"),
          event("step-start", "manager-approval", "running"),
          event("workflow-suspended", "manager-approval", "suspended")
        ]
        for (const [i, text] of events.entries()) {
          yield* sql`INSERT INTO workflow_events ${
            sql.insert({ execution_id: "old-1", seq: i + 1, event: text, created_at: at })
          }`
        }
      }).pipe(Effect.provide(SqliteClient.layer({ filename })), Effect.orDie)

      const { url } = Context.get(
        yield* Layer.build(TestServerLive({ config: { databaseUrl: Redacted.make(`file:${filename}`) } })),
        TestServer
      )
      const resumed = yield* fetchJson(
        `${url}/workflows/approval/executions/old-1/resume`,
        json({ resumeData: { approved: true } })
      )
      expect(resumed.body.data).toMatchObject({ status: "completed", result: { approved: true, amount: 500 } })
      const listed = yield* fetchJson(`${url}/workflows/executions?workflowId=approval`)
      const events: Array<{ id: string; type: string }> = listed.body.data.find((e: any) => e.id === "old-1").events
      expect(events.map((e) => e.id)).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"])
      expect(events.slice(5).map((e) => e.type)).toEqual(["step-start", "step-complete", "workflow-complete"])
    }),
  60_000
)
