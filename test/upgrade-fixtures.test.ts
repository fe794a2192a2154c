import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { copyFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { freePort, killed, spawnMain, waitForHttp } from "./support/process.js"
import { tempDir } from "./support/TestServer.js"

/**
 * Databases made by the release before issue #12's schema changes (test/fixtures/upgrade, see its
 * make-fixtures.sh), opened by the service as built now (`npm run build` first): it migrates them,
 * finishes the executions they hold and answers the conversation as before.
 */

const FIXTURES = fileURLToPath(new URL("./fixtures/upgrade/", import.meta.url))

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
    async (r) => ({
      status: r.status,
      body: await r.json()
    })
  )
const get = (url: string) => fetch(url).then((r) => r.json()).then((body) => body.data)

const stateOf = (base: string, workflowId: string, executionId: string) =>
  get(`${base}/workflows/${workflowId}/executions/${executionId}/state`)

/** Starts the built service on the database, runs the checks, stops it. */
const upgradeAndCheck = (databaseUrl: string) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const port = await freePort()
      const server = spawnMain(["--port", String(port)], {
        env: { DATABASE_URL: databaseUrl, AI_PROVIDER: "builtin", LOG_LEVEL: "warn" }
      })
      await waitForHttp(port).catch((error) => {
        killed(server)
        throw new Error(`${error}\n${server.stderr()}`)
      })
      return { server, base: `http://127.0.0.1:${port}` }
    }),
    ({ base }) => Effect.promise(() => checkUpgraded(base)),
    ({ server }) => Effect.sync(() => killed(server))
  )

const checkUpgraded = async (base: string) => {
  // The execution the old process was running when it was killed is recovered and finishes.
  let slow = await stateOf(base, "slow", "slow-running")
  for (const deadline = Date.now() + 30_000; slow.status === "running" && Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    slow = await stateOf(base, "slow", "slow-running")
  }
  expect(slow).toMatchObject({ status: "completed", result: { waitedMs: 1000 } })

  // The suspended ones resume to completion.
  expect(await stateOf(base, "approval", "approval-suspended-1")).toMatchObject({
    status: "suspended",
    suspension: { stepIndex: 1, stepId: "manager-approval", reason: "manager approval required" }
  })
  const approved = await post(`${base}/workflows/approval/executions/approval-suspended-1/resume`, {
    resumeData: { approved: true }
  })
  expect(approved.body.data).toMatchObject({ status: "completed", result: { approved: true, amount: 500 } })
  const refused = await post(`${base}/workflows/approval/executions/approval-suspended-2/resume`, {
    resumeData: { approved: false }
  })
  expect(refused.body.data).toMatchObject({ status: "completed", result: { approved: false, amount: 250 } })

  // Every execution, with its events numbered on from the stored ones.
  const listed: Array<any> = await get(`${base}/workflows/executions?limit=10`)
  expect(listed.map((e) => [e.id, e.status]).sort()).toEqual([
    ["approval-completed", "completed"],
    ["approval-suspended-1", "completed"],
    ["approval-suspended-2", "completed"],
    ["pipeline-completed", "completed"],
    ["slow-running", "completed"]
  ])
  const resumedEvents: Array<any> = listed.find((e) => e.id === "approval-suspended-1").events
  expect(resumedEvents.map((e) => e.id)).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"])
  expect(resumedEvents.map((e) => e.type).slice(4)).toEqual([
    "workflow-suspended",
    "step-start",
    "step-complete",
    "workflow-complete"
  ])
  expect(listed.find((e) => e.id === "pipeline-completed").output).toEqual({
    text: "fixture text",
    upper: "FIXTURE TEXT",
    length: 12,
    doubled: 24,
    winner: "fast"
  })

  // The conversation: its history as stored, and its memory in the next call's prompt.
  const history = await get(`${base}/agents/assistant/history?conversationId=fixture-conversation`)
  expect(history.pagination.total).toBe(2)
  expect(history.entries.map((entry: any) => [entry.input, entry.output, entry.userId])).toEqual([
    ["What is my name?", "[builtin/echo] You said: What is my name?", "fixture-user"],
    ["My name is Ada.", "[builtin/echo] You said: My name is Ada.", "fixture-user"]
  ])
  const call = (conversationId: string) =>
    post(`${base}/agents/assistant/text`, {
      input: "Again please",
      options: { conversationId, userId: "fixture-user" }
    })
  const continued = await call("fixture-conversation")
  const fresh = await call("a-new-conversation")
  expect(continued.body.data.text).toBe("[builtin/echo] You said: Again please")
  // The builtin model counts a word a token: the four remembered messages are 4 + 7 + 4 + 7 words.
  expect(continued.body.data.usage.promptTokens - fresh.body.data.usage.promptTokens).toBe(22)

  // Migration 0020 (issue #31) applied: a durable timer parks and wakes on the upgraded database.
  const reminded = await post(`${base}/workflows/reminder/execute`, { input: { message: "upgraded", delaySeconds: 1 } })
  expect(reminded.body.data).toMatchObject({ status: "completed", result: { message: "upgraded", delaySeconds: 1 } })
}

// before-0016: main at 91b4f03 (migrations up to 0010); before-0020: main at b385247 (up to 0019).
const RELEASES = ["before-0016", "before-0020"] as const

describe.each(RELEASES)("a SQLite file made by the release %s (test/fixtures/upgrade)", (release) => {
  it.scopedLive(
    "copied: migrated at start-up; executions finish, the conversation reads as before",
    () =>
      Effect.gen(function*() {
        const file = join(yield* tempDir, "service.db")
        copyFileSync(join(FIXTURES, `${release}.sqlite`), file)
        yield* upgradeAndCheck(`file:${file}`)
      }),
    90_000
  )
})

describe.skipIf(!postgresAvailable).each(RELEASES)(
  "a Postgres dump made by the release %s (test/fixtures/upgrade)",
  (release) => {
    it.scopedLive(
      "restored into a fresh database: migrated at start-up; executions finish, the conversation reads as before",
      () =>
        Effect.gen(function*() {
          const url = yield* freshPostgresDatabase
          execFileSync("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-f", join(FIXTURES, `${release}.postgres.sql`), url], {
            stdio: "pipe"
          })
          yield* upgradeAndCheck(url)
        }),
      90_000
    )
  }
)
