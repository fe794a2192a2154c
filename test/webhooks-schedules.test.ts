import { expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Redacted, Schema, Scope } from "effect"
import { createHmac } from "node:crypto"
import { defineApp } from "../src/App.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually, makeReceiver, type Received, webhookTestConfig } from "./support/webhooks.js"

/**
 * Completion callbacks on schedules (issue #33 item 2): a CRUD schedule's webhook is checked when it is
 * made (400) and each firing's execution delivers to it, signed with its creator's secret; a code
 * schedule's executions (owned by `system:schedule/<id>`) are signed with `webhooks.systemSecret`, and
 * start-up fails without one.
 */

const SYSTEM_SECRET = `whsec_${Buffer.from("system-secret-for-schedule-callbacks").toString("base64")}`

const verifies = (received: Received, secret: string) => {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const signed = `${received.headers["webhook-id"]}.${received.headers["webhook-timestamp"]}.${received.body}`
  return String(received.headers["webhook-signature"]).split(" ").includes(
    `v1,${createHmac("sha256", key).update(signed).digest("base64")}`
  )
}

/** Answers its input; a code schedule each second when `hook` is given. */
const counter = (hook?: string) =>
  workflow({
    id: "counter",
    name: "Counter",
    purpose: "Answers its input",
    input: Schema.Struct({ n: Schema.Number }),
    result: Schema.Struct({ n: Schema.Number }),
    ...(hook === undefined
      ? {}
      : {
        schedule: {
          name: "each-second",
          cron: "* * * * * *",
          input: { n: 7 },
          catchUp: "none" as const,
          webhook: { url: hook }
        }
      })
  }).andThen({ id: "answer", execute: ({ data }) => ({ n: data.n }) })

const scheduleConfig = (systemSecret?: string) => ({
  ...webhookTestConfig(systemSecret === undefined ? {} : { systemSecret: Redacted.make(systemSecret) }),
  schedules: { minIntervalMs: 1000 }
})

const serve = (app: ReturnType<typeof defineApp>, config: ReturnType<typeof scheduleConfig>) =>
  Effect.flatMap(Scope.Scope, (scope) => Layer.buildWithScope(TestServerLive({ app, config }), scope)).pipe(
    Effect.map((context) => Context.get(context, TestServer))
  )

it.scopedLive(
  "a CRUD schedule's webhook is checked when made (400) and each firing's execution delivers to it",
  () =>
    Effect.gen(function*() {
      const receiver = yield* makeReceiver()
      const { url } = yield* serve(defineApp({ workflows: [counter()] }), scheduleConfig())
      const secret = (yield* fetchJson(`${url}/webhooks/secret`, json({}))).body.data.secret as string
      const create = (hook: string) =>
        fetchJson(
          `${url}/workflows/counter/schedules`,
          json({ cron: "* * * * * *", input: { n: 3 }, webhook: { url: hook } })
        )
      const refused = yield* create("http://127.0.0.1/x")
      expect(refused.status).toBe(400)
      expect(refused.body.error).toContain("must be https")
      const made = yield* create(`https://127.0.0.1:${receiver.port}/s?key=hidden`)
      expect(made.status).toBe(201)
      expect(made.body.data.webhook).toEqual({ url: `https://127.0.0.1:${receiver.port}/s?redacted` })
      const [received] = yield* eventually(
        Effect.succeed(receiver.received),
        (r) => r.length >= 1,
        "a firing's delivery"
      )
      expect(verifies(received, secret)).toBe(true)
      const body = JSON.parse(received.body)
      expect(body).toMatchObject({ type: "execution.completed", data: { workflowId: "counter", result: { n: 3 } } })
      expect(body.data.executionId).toMatch(new RegExp(`^sched:${made.body.data.id}:`))
      yield* fetchJson(`${url}/workflows/counter/schedules/${made.body.data.id}/pause`, json({}))
    }),
  60_000
)

it.scopedLive(
  "a code schedule's executions are signed with webhooks.systemSecret; without one start-up fails naming it",
  () =>
    Effect.gen(function*() {
      const receiver = yield* makeReceiver()
      const app = defineApp({ workflows: [counter(`https://127.0.0.1:${receiver.port}/code`)] })
      const failed = yield* Effect.exit(Effect.scoped(serve(app, scheduleConfig())))
      expect(Exit.isFailure(failed)).toBe(true)
      if (Exit.isFailure(failed)) expect(Cause.pretty(failed.cause)).toContain("WEBHOOK_SYSTEM_SECRET")
      const badHost = defineApp({ workflows: [counter("https://example.com/code")] })
      const refused = yield* Effect.exit(Effect.scoped(serve(badHost, scheduleConfig(SYSTEM_SECRET))))
      expect(Exit.isFailure(refused) ? Cause.pretty(refused.cause) : "").toContain(
        "host example.com is not in webhooks.allowedHosts"
      )
      yield* serve(app, scheduleConfig(SYSTEM_SECRET))
      const [received] = yield* eventually(Effect.succeed(receiver.received), (r) =>
        r.length >= 1, "a code firing's delivery")
      expect(verifies(received, SYSTEM_SECRET)).toBe(true)
      expect(JSON.parse(received.body).data).toMatchObject({
        workflowId: "counter",
        status: "completed",
        result: { n: 7 }
      })
    }),
  60_000
)
