import type { streamText } from "ai"
import { Cause } from "effect"
import { messageOf } from "../../core/errors.js"
import type { ModelRef, TextResult, Usage } from "../AgentsSchemas.js"
import type { NewApprovals, PendingApproval, Prior } from "./contract.js"
import { toUsage } from "./results.js"
import { StreamBlocked } from "./streamBlocked.js"
import { addUsage } from "./tally.js"
import { streamedToolOutcome, type ToolOutcome } from "./toolOutcomes.js"

export type StreamEvent =
  | { readonly type: "text-delta"; readonly delta: string }
  | { readonly type: "reasoning-delta"; readonly delta: string }
  | { readonly type: "tool-call"; readonly toolCallId: string; readonly toolName: string; readonly args: unknown }
  | { readonly type: "tool-result"; readonly toolCallId: string; readonly toolName: string; readonly result: unknown }
  | { readonly type: "tool-approval-request" } & PendingApproval
  | { readonly type: "finish"; readonly finishReason: string; readonly usage: Usage; readonly model?: ModelRef }
  | { readonly type: "error"; readonly error: string; readonly guardrail?: string }

type StreamTextResult = ReturnType<typeof streamText>
type Part = StreamTextResult extends { stream: AsyncIterable<infer P> } ? P : never

export type StreamOutcome =
  | {
    readonly status: "completed"
    readonly output: string
    readonly usage: Usage
    readonly toolCalls: TextResult["toolCalls"]
    readonly toolResults: ReadonlyArray<ToolOutcome>
    readonly model?: ModelRef | undefined
  }
  | { readonly status: "error"; readonly cause: Cause.Cause<unknown> }
  | { readonly status: "cancelled" }
  | { readonly status: "pending"; readonly approvals: NewApprovals }

/**
 * Tool approval on a stream (issue #32): what the call did before it stopped for approval, and how the
 * requests it stops on now are stored (given the whole call's tool traffic and usage).
 */
export interface StreamApprovals {
  readonly prior?: Prior | undefined
  readonly store: (
    requests: ReadonlyArray<Omit<PendingApproval, "expiresAt">>,
    whole: Prior
  ) => Promise<{ readonly pending: ReadonlyArray<PendingApproval>; readonly rows: NewApprovals }>
}

const toStreamEvent = (part: Part): StreamEvent | undefined => {
  switch (part.type) {
    case "text-delta":
      return { type: "text-delta", delta: part.text }
    case "reasoning-delta":
      return { type: "reasoning-delta", delta: part.text }
    case "tool-call":
      return { type: "tool-call", toolCallId: part.toolCallId, toolName: part.toolName, args: part.input }
    case "tool-result":
      return { type: "tool-result", toolCallId: part.toolCallId, toolName: part.toolName, result: part.output }
    case "tool-error":
      return {
        type: "tool-result",
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        result: { error: messageOf(part.error) }
      }
    case "finish":
      return { type: "finish", finishReason: part.finishReason, usage: toUsage(part.totalUsage) }
    case "error":
      return part.error instanceof StreamBlocked
        ? { type: "error", error: part.error.message, guardrail: part.error.blocked.guardrail }
        : { type: "error", error: messageOf(part.error) }
    // Start, step boundaries, raw provider data and the like are never sent: they can reveal the prompt
    // (an approval request is sent once stored, by eventStream).
    case "start":
    case "start-step":
    case "finish-step":
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
    case "reasoning-file":
    case "tool-input-start":
    case "tool-input-delta":
    case "tool-input-end":
    case "tool-approval-request":
    case "tool-approval-response":
    case "tool-output-denied":
    case "steering-message":
    case "source":
    case "file":
    case "custom":
    case "raw":
    case "ping":
    case "abort":
      return undefined
  }
}

/**
 * The SDK's full stream with nothing kept beside it. Each read of `stream` tees the SDK's stream and
 * keeps the other branch for later reads; nothing reads it for /stream, so it would queue every part of
 * the answer until the call ends (a few hundred bytes a word, seen in heap snapshots of open streams).
 * The kept branch is cancelled: the call's outcome comes from the SDK's processing upstream of the tee.
 */
export const fullStreamAlone = (result: StreamTextResult): ReadableStream<Part> => {
  const full = result.stream
  const kept = (result as unknown as { readonly baseStream?: unknown }).baseStream
  if (kept instanceof ReadableStream) kept.cancel().catch(() => undefined)
  return full
}

/**
 * The SDK's full stream as the events of POST /agents/:id/stream, pulled one at a time (nothing is
 * read ahead or buffered). The outcome is recorded by `record` exactly once: a completed call before
 * its `finish` event is passed on (so memory and history are committed before the client sees the
 * end), an error when the model's stream fails, a cancellation when the reader goes away; `abort`
 * then stops the model call.
 */
export const eventStream = (
  fullStream: ReadableStream<Part>,
  record: (outcome: StreamOutcome) => Promise<void>,
  abort: () => void,
  approvals?: StreamApprovals,
  answered?: () => ModelRef
): ReadableStream<StreamEvent> => {
  const reader = fullStream.getReader()
  let recorded = false
  let stepText = ""
  const toolCalls: Array<TextResult["toolCalls"][number]> = []
  const toolResults: Array<ToolOutcome> = []
  const requests: Array<Omit<PendingApproval, "expiresAt">> = []
  const once = async (outcome: StreamOutcome) => {
    if (recorded) return
    recorded = true
    await record(outcome)
  }
  return new ReadableStream<StreamEvent>({
    async pull(controller) {
      for (;;) {
        let next: ReadableStreamReadResult<Part>
        try {
          next = await reader.read()
        } catch (error) {
          await once({ status: "error", cause: Cause.fail(error) })
          controller.enqueue({ type: "error", error: messageOf(error) })
          controller.close()
          return
        }
        if (next.done) {
          await once({ status: "cancelled" })
          controller.close()
          return
        }
        const part = next.value
        if (part.type === "start-step") stepText = ""
        else if (part.type === "text-delta") stepText += part.text
        else if (part.type === "tool-call") {
          toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.input })
        } else if (part.type === "tool-result" || part.type === "tool-error") {
          toolResults.push(streamedToolOutcome(part))
        } else if (part.type === "error") await once({ status: "error", cause: Cause.fail(part.error) })
        else if (part.type === "abort") await once({ status: "cancelled" })
        else if (part.type === "tool-approval-request" && approvals !== undefined) {
          const { input, toolCallId, toolName } = part.toolCall
          requests.push({ approvalId: part.approvalId, toolName, toolCallId, input })
        } else if (part.type === "finish" && approvals !== undefined) {
          const now: Prior = { usage: toUsage(part.totalUsage), toolCalls, toolResults: [], outcomes: toolResults }
          const prior = approvals.prior
          const whole: Prior = prior === undefined ? now : {
            usage: addUsage(prior.usage, now.usage),
            toolCalls: [...prior.toolCalls, ...toolCalls],
            toolResults: [],
            outcomes: [...prior.outcomes, ...toolResults]
          }
          const model = answered?.()
          if (requests.length > 0) {
            const stored = await approvals.store(requests, whole)
            await once({ status: "pending", approvals: stored.rows })
            for (const request of stored.pending) controller.enqueue({ type: "tool-approval-request", ...request })
          } else {
            await once({
              status: "completed",
              output: stepText,
              usage: whole.usage,
              toolCalls: whole.toolCalls,
              toolResults: whole.outcomes,
              model
            })
          }
          controller.enqueue({
            type: "finish",
            finishReason: part.finishReason,
            usage: whole.usage,
            ...(model === undefined ? {} : { model })
          })
          return
        } else if (part.type === "finish") {
          const model = answered?.()
          await once({
            status: "completed",
            output: stepText,
            usage: toUsage(part.totalUsage),
            toolCalls,
            toolResults,
            model
          })
          if (model !== undefined) {
            controller.enqueue({
              type: "finish",
              finishReason: part.finishReason,
              usage: toUsage(part.totalUsage),
              model
            })
            return
          }
        }
        const event = toStreamEvent(part)
        if (event !== undefined) {
          controller.enqueue(event)
          return
        }
      }
    },
    async cancel(reason) {
      abort()
      await reader.cancel(reason).catch(() => undefined)
      await once({ status: "cancelled" })
    }
  }, { highWaterMark: 0 })
}
