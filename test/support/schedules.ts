import { SqlClient } from "@effect/sql"
import { Context, Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { TestServer } from "./TestServer.js"

/** Workflows with schedules (issue #33), shared by the schedule tests. */

/** Answers its input and the schedule it was fired by (its context). */
export const tick = workflow({
  id: "tick",
  name: "Tick",
  purpose: "Answers what it was started with",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ n: Schema.Number, userId: Schema.NullOr(Schema.String) }),
  schedule: { name: "every-second", cron: "* * * * * *", input: { n: 1 }, catchUp: "all" }
}).andThen({ id: "answer", execute: ({ data, userId }) => ({ n: data.n, userId: userId ?? null }) })

/** No code schedule: the API's only. */
export const plain = workflow({
  id: "plain",
  name: "Plain",
  purpose: "Answers its input",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Struct({ n: Schema.Number })
}).andThen({ id: "answer", execute: ({ data }) => ({ n: data.n }) })

export const schedulesApp = defineApp({ workflows: [tick, plain] })

/** A second, the shortest interval in tests (`schedules.minIntervalSeconds`). */
export const testScheduleConfig = { schedules: { minIntervalMs: 1000 } }

export const CODE_ID = "code.tick.every-second"

/** The ids and statuses of a schedule's executions, by fire time. */
export const firedOf = (sql: SqlClient.SqlClient, scheduleId: string) =>
  sql<{ id: string; status: string; user_id: string | null }>`SELECT id, status, user_id FROM workflow_executions
    WHERE id LIKE ${`sched:${scheduleId}:%`} ORDER BY id`.pipe(Effect.orDie)

export const sqlOfServer = Effect.map(TestServer, ({ services }) => Context.get(services, SqlClient.SqlClient))

export { eventually } from "./timers.js"
