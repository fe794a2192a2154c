import { expect, layer } from "@effect/vitest"
import { Data, Effect, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/** A domain error with no message: only its tag and fields say what went wrong. */
class RefundRefused extends Data.TaggedError("RefundRefused")<{
  readonly ticketId: string
  readonly reason: string
  readonly amount: number
  readonly at: Date
  readonly count: bigint
  readonly callback: string
  readonly notes: string
}> {}

const Ticket = Schema.Struct({ ticketId: Schema.String })

const refund = workflow({
  id: "refund",
  name: "Refund",
  purpose: "Refunds a ticket",
  input: Ticket,
  result: Schema.Unknown
})
  .andThen({ id: "load", execute: ({ data }) => data })
  .andThen({
    id: "refund",
    execute: ({ data }) =>
      Effect.fail(
        new RefundRefused({
          ticketId: data.ticketId,
          reason: "card-expired-7731",
          amount: 12.5,
          at: new Date(0),
          count: 10n,
          callback: "https://pay.example/cb?token=s3cret-token&page=2",
          notes: "n".repeat(20_000)
        })
      )
  })

class AuditRefused extends Data.TaggedError("AuditRefused")<{ readonly auditor: string }> {}

const audited = workflow({
  id: "audited",
  name: "Audited",
  purpose: "A tap that fails",
  input: Ticket,
  result: Schema.Unknown
})
  .andTap({ id: "audit", execute: () => Effect.fail(new AuditRefused({ auditor: "auditor-5521" })) })
  .andThen({ id: "done", execute: ({ data }) => data })

const app = defineApp({ workflows: [refund, audited] })

const expectedFields = (fields: Record<string, unknown>) => {
  expect(fields).toMatchObject({
    ticketId: "T-1",
    amount: 12.5,
    at: "Date",
    count: "bigint",
    callback: "https://pay.example/cb?token=[redacted]&page=2"
  })
  expect(String(fields.notes).endsWith("…[truncated: 20000 characters in all]")).toBe(true)
  expect(Buffer.byteLength(JSON.stringify(fields))).toBeLessThanOrEqual(8 * 1024)
}

const poll = <A>(what: string, read: Effect.Effect<A | undefined>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (true) {
      const found = yield* read
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`${what} did not appear within 20 s`)
      yield* Effect.sleep("50 millis")
    }
  })

layer(TestServerLive({ app }), { excludeTestServices: true })("typed step errors", (it) => {
  it.effect(
    "a tagged error without a message keeps its tag and fields in the envelope, state, events, logs and span",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const executed = yield* fetchJson(`${url}/workflows/refund/execute`, json({ input: { ticketId: "T-1" } }))
        expect(executed.status).toBe(500)
        const { error, errorDetail, executionId } = executed.body
        expect(error).toMatch(
          /^Failed to execute workflow: step refund: RefundRefused \{"ticketId":"T-1","reason":"card-expired-7731","amount":12.5,"at":"Date",/
        )
        expect(errorDetail._tag).toBe("RefundRefused")
        expect(error).toBe(`Failed to execute workflow: step refund: ${errorDetail.message}`)
        expectedFields(errorDetail.fields)

        const state = (yield* fetchJson(`${url}/workflows/refund/executions/${executionId}/state`)).body.data
        expect(state.error).toBe(`step refund: ${errorDetail.message}`)
        expect(state.errorDetail).toEqual(errorDetail)

        const streamed = yield* postSse(`${url}/workflows/refund/stream`, { input: { ticketId: "T-1" } })
        const failed = streamed.events.find((event: any) => event.data.type === "workflow-error")!.data as any
        expect(failed.error).toBe(`step refund: ${errorDetail.message}`)
        expect(failed.errorDetail).toEqual(errorDetail)
        const result = streamed.events.find((event: any) => event.data.type === "workflow-result")!.data as any
        expect(result.errorDetail).toEqual(errorDetail)

        const logged = yield* poll(
          "the failure's log entry",
          Effect.map(
            fetchJson(`${url}/api/logs?executionId=${executionId}&limit=100`),
            (response) =>
              (response.body.data as Array<any>).find((entry) => entry.message.startsWith("workflow failed"))
          )
        )
        // The line's message is the error; beside it the tag and fields, whole although the message is long.
        expect(logged.attributes.errorDetail._tag).toBe("RefundRefused")
        expectedFields(logged.attributes.errorDetail.fields)
        expect(JSON.stringify(logged)).not.toContain("s3cret-token")
        expect(logged.traceId).toEqual(expect.any(String))

        const step = yield* poll(
          "the refund step's span",
          Effect.gen(function*() {
            const traces =
              (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=refund&limit=50`)).body.data
                .traces
            for (const summary of traces) {
              const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
              const span = trace.spans.find((span: any) =>
                span.name === "workflow.step" && span.attributes["step.id"] === "refund" &&
                span.attributes["execution.id"] === executionId
              )
              if (span !== undefined) return { span, trace }
            }
            return undefined
          })
        )
        expect(step.span.attributes["error.type"]).toBe("RefundRefused")
        expect(step.span.attributes).not.toHaveProperty("error.fields")
        // Nowhere in the trace: not in the step span's status or exception, nor as the log line's event.
        expect(JSON.stringify(step.trace)).not.toContain("card-expired-7731")
        expect(step.trace.traceId).toBe(logged.traceId)
      }),
    60_000
  )
})

layer(TestServerLive({ app }), { excludeTestServices: true })("typed tap errors", (it) => {
  it.effect(
    "a failed tap step's warning names the error's tag, and its fields stay out of the trace",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const executed = yield* fetchJson(`${url}/workflows/audited/execute`, json({ input: { ticketId: "T-3" } }))
        expect(executed.body.data.status).toBe("completed")
        const { executionId } = executed.body.data
        const warned = yield* poll(
          "the tap's warning",
          Effect.map(
            fetchJson(`${url}/api/logs?executionId=${executionId}&limit=100`),
            (response) =>
              (response.body.data as Array<any>).find((entry) => entry.message.startsWith("tap step audit failed"))
          )
        )
        expect(warned.message).toBe("tap step audit failed: AuditRefused")
        const span = yield* stepSpanOf(url, "audited", executionId, "audit")
        const trace = (yield* fetchJson(`${url}/observability/traces/${span.traceId}`)).body.data
        expect(JSON.stringify(trace)).not.toContain("auditor-5521")
      }),
    60_000
  )
})

/** The `workflow.step` span of `stepId` in `executionId`, once stored. */
const stepSpanOf = (url: string, workflowId: string, executionId: string, stepId: string) =>
  poll(
    `the ${stepId} step's span`,
    Effect.gen(function*() {
      const traces =
        (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=${workflowId}&limit=50`)).body.data
          .traces
      for (const summary of traces) {
        const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
        const span = trace.spans.find((span: any) =>
          span.name === "workflow.step" && span.attributes["step.id"] === stepId &&
          span.attributes["execution.id"] === executionId
        )
        if (span !== undefined) return span
      }
      return undefined
    })
  )

layer(TestServerLive({ app, config: { recordContent: true } }), { excludeTestServices: true })(
  "typed step errors (recordContent)",
  (it) => {
    it.effect(
      "with recordContent the step's span also keeps the error's fields, redacted",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const executed = yield* fetchJson(`${url}/workflows/refund/execute`, json({ input: { ticketId: "T-2" } }))
          const span = yield* stepSpanOf(url, "refund", executed.body.executionId, "refund")
          expect(span.attributes["error.type"]).toBe("RefundRefused")
          expect(JSON.parse(span.attributes["error.fields"])).toMatchObject({
            ticketId: "T-2",
            reason: "card-expired-7731",
            callback: "https://pay.example/cb?token=[redacted]&page=2"
          })
        }),
      60_000
    )

    it.effect("/doc shows errorDetail, optional, on the failure envelope and the state", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { components } = (yield* fetchJson(`${url}/doc`)).body
        expect(Object.keys(components.schemas.ErrorDetail.properties)).toEqual(["_tag", "message", "fields"])
        expect(components.schemas.ExecutionState.properties.errorDetail).toBeDefined()
        expect(components.schemas.ExecutionState.required).not.toContain("errorDetail")
        const failed = JSON.stringify(components.schemas.WorkflowFailed ?? {})
        expect(failed).toContain("errorDetail")
      }), 60_000)
  }
)
