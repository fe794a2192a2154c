import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Exit, Layer, Redacted, Schema, Scope } from "effect"
import { defineApp } from "../../src/App.js"
import { resolveServerConfig, type ServerConfigShape } from "../../src/config/ServerConfig.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./TestServer.js"

/** Workflows with concurrency limits (issue #33), and what their steps record (the servers run in this process). */

/** Per workflow: the steps executing now, the most at once, and the executions in the order their step began. */
export const activity = new Map<string, { active: number; max: number; starts: Array<string> }>()
const of = (workflowId: string) => {
  const found = activity.get(workflowId) ?? { active: 0, max: 0, starts: [] }
  activity.set(workflowId, found)
  return found
}
export const resetActivity = (workflowId: string) => activity.set(workflowId, { active: 0, max: 0, starts: [] })

const latches = new Map<string, { promise: Promise<void>; resolve: () => void }>()
const latchOf = (name: string) => {
  let found = latches.get(name)
  if (found === undefined) {
    let resolve = () => {}
    const promise = new Promise<void>((r) => (resolve = r))
    found = { promise, resolve }
    latches.set(name, found)
  }
  return found
}
/** Lets the steps waiting at `name` (and later ones) go on. */
export const release = (name: string) => Effect.sync(() => latchOf(name).resolve())

const Input = Schema.Struct({
  ms: Schema.optional(Schema.Number),
  latch: Schema.optional(Schema.String),
  group: Schema.optional(Schema.String),
  suspend: Schema.optional(Schema.Boolean)
})
const Result = Schema.Struct({ ok: Schema.Boolean })

/** Records its start, waits (its latch, or `ms`), records its end: whatever ends it. */
const work = (workflowId: string) => ({
  id: "work",
  execute: ({ data, executionId }: { readonly data: typeof Input.Type; readonly executionId: string }) =>
    Effect.gen(function*() {
      const seen = of(workflowId)
      seen.active++
      seen.max = Math.max(seen.max, seen.active)
      seen.starts.push(executionId)
      yield* Effect.ensuring(
        data.latch === undefined ? Effect.sleep(data.ms ?? 50) : Effect.promise(() => latchOf(data.latch!).promise),
        Effect.sync(() => seen.active--)
      )
      return { ok: true }
    })
})

/** At most 2 at once (the default key: the workflow). */
export const pair = workflow({
  id: "pair",
  name: "Pair",
  purpose: "Two at a time",
  input: Input,
  result: Result,
  concurrency: { limit: 2 }
})
  .andThen(work("pair"))

/** One at a time per `group` (the key function); suspends first when asked to. */
export const single = workflow({
  id: "single",
  name: "Single",
  purpose: "One at a time per group",
  input: Input,
  result: Result,
  concurrency: { limit: 1, key: (input) => input.group ?? "none" }
})
  .andThen({
    id: "gate",
    execute: (
      { data, resumeData, suspend }
    ) => (data.suspend === true && resumeData === undefined ? suspend("approval") : data)
  })
  .andThen(work("single"))

/** One at a time; a start while one runs is refused (409). */
export const solo = workflow({
  id: "solo",
  name: "Solo",
  purpose: "One at a time, rejecting",
  input: Input,
  result: Result,
  concurrency: { limit: 1, onBusy: "reject" }
}).andThen(work("solo"))

/** One at a time; a start supersedes the running one. */
export const latest = workflow({
  id: "latest",
  name: "Latest",
  purpose: "One at a time, the newest wins",
  input: Input,
  result: Result,
  concurrency: { limit: 1, onBusy: "interrupt" }
}).andThen(work("latest"))

/** One at a time per `group`; sleeps `ms` first (parked, it holds no slot). */
export const napper = workflow({
  id: "napper",
  name: "Napper",
  purpose: "Sleeps, then works, one at a time per group",
  input: Input,
  result: Result,
  concurrency: { limit: 1, key: (input) => input.group ?? "none" }
})
  .andSleep({ id: "nap", duration: ({ data }) => Duration.millis(data.ms ?? 0) })
  .andThen(work("napper"))

/** One at a time across all owners (`scope: 'global'`). */
export const shared = workflow({
  id: "shared",
  name: "Shared",
  purpose: "One at a time for everyone",
  input: Input,
  result: Result,
  concurrency: { limit: 1, scope: "global" }
}).andThen(work("shared"))

/** One at a time across all owners, and a start supersedes (issue #42: only its own owner's executions). */
export const sharedLatest = workflow({
  id: "shared-latest",
  name: "Shared latest",
  purpose: "One at a time for everyone, the newest of an owner wins",
  input: Input,
  result: Result,
  concurrency: { limit: 1, scope: "global", onBusy: "interrupt" }
}).andThen(work("shared-latest"))

export const concurrencyApp = defineApp({ workflows: [pair, single, solo, latest, napper, shared, sharedLatest] })

/** Fast polls, a short drain: the sweep and restarts in test time. */
export const concurrencyConfig: Partial<ServerConfigShape> = {
  // /execute answers here are the executions' ends: on a loaded host a queue can outlast the default 30 s
  // after which /execute answers 202 (test/execute-wait.test.ts tests that).
  workflows: { ...resolveServerConfig({}, {}).workflows, pollMs: 200, drainMs: 300, executeWaitMs: 600_000 }
}

type Answer = { readonly status: number; readonly body: any }
export const post = (url: string, body: unknown = {}) => fetchJson(url, json(body)) as Effect.Effect<Answer>

/** The statuses of a workflow's rows as stored ('queued' included), by id. */
export const rowsOf = (sql: SqlClient.SqlClient, workflowId: string) =>
  sql<{ id: string; status: string; created_at: string; concurrency_key: string | null }>`
    SELECT id, status, created_at, concurrency_key FROM workflow_executions WHERE workflow_id = ${workflowId} ORDER BY created_at, id`
    .pipe(
      Effect.orDie
    )

export const sqlOf = Effect.map(TestServer, ({ services }) => Context.get(services, SqlClient.SqlClient))

/** An instance of the service on `databaseUrl`, stopped by `stop`. */
export const startInstance = (
  databaseUrl: string,
  instanceId: string,
  workflows: Partial<ServerConfigShape["workflows"]> = {}
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const config = {
      ...concurrencyConfig,
      workflows: { ...concurrencyConfig.workflows!, ...workflows },
      instanceId,
      databaseUrl: Redacted.make(databaseUrl)
    }
    const context = yield* Layer.buildWithScope(
      TestServerLive({ app: concurrencyApp, config }),
      scope
    )
    const server = Context.get(context, TestServer)
    return {
      server,
      url: server.url,
      stop: Scope.close(scope, Exit.void),
      sql: Context.get(server.services, SqlClient.SqlClient)
    }
  })

export { eventually } from "./timers.js"

/** Fires every second (the test setting); one at a time: the firings queue behind a held one. */
export const ticking = workflow({
  id: "ticking",
  name: "Ticking",
  purpose: "Fired each second, one at a time",
  input: Input,
  result: Result,
  schedule: { name: "every-second", cron: "* * * * * *", input: { latch: "ticking" }, catchUp: "none" },
  concurrency: { limit: 1 }
}).andThen(work("ticking"))

export const tickingApp = defineApp({ workflows: [ticking] })
