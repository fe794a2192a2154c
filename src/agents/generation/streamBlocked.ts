/** A streamed answer stopped by a plug-in (an output guardrail's block): the error part that ends it, and how it is recorded. */
import { Cause, Option } from "effect"
import type { GuardrailBlocked } from "../../core/errors.js"
import type { Outcome } from "./contract.js"

/**
 * A streamed answer's block, as the `error` part that ends the guarded stream carries it: the client
 * sees the guardrail's message; history records `blocked` with the text already sent.
 */
export class StreamBlocked extends Error {
  constructor(readonly blocked: GuardrailBlocked, readonly sent: string) {
    super(blocked.message)
  }
}

const blockedIn = (outcome: Outcome): StreamBlocked | undefined => {
  if (outcome.status !== "error" || outcome.cause === undefined) return undefined
  const failure = Cause.failureOption(outcome.cause)
  return Option.isSome(failure) && failure.value instanceof StreamBlocked ? failure.value : undefined
}

/** `record` with a guardrail's block recorded as `blocked`, the text sent before it as the output. */
export const recordingBlocks = <O extends Outcome>(record: (outcome: Outcome) => Promise<void>) => (outcome: O) => {
  const blocked = blockedIn(outcome)
  return record(blocked === undefined ? outcome : { status: "blocked", output: blocked.sent })
}

/** Records once, whoever asks first (the guarded stream, or the SDK's error and abort callbacks). */
export const once = (record: (outcome: Outcome) => Promise<void>) => {
  let done = false
  return (outcome: Outcome): Promise<void> => {
    if (done) return Promise.resolve()
    done = true
    return record(outcome)
  }
}
