import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult
} from "@ai-sdk/provider"
import { APICallError } from "@ai-sdk/provider"
import { Cause, Data, Duration, Effect, Exit, Option, Runtime, Schedule, type Tracer } from "effect"
import { countModelAttemptFailure, countModelFallback } from "../../observability/metrics/instruments.js"

/**
 * Model fallback (issue #32, item 4): an agent's `model` may be a list, tried in order. Each model is
 * retried on a retryable failure under `retry` (a Schedule), then the next one is tried; a failure that
 * is not retryable (400, 401, 404, a cancelled call...) fails the call at once.
 */
export interface FallbackPolicy {
  /**
   * The retries of one model, fed the failure (its recurrences are the retries). Default: 2 retries,
   * exponential back-off from 200 ms (doubling), each delay at most `maxDelay`.
   */
  readonly retry?: Schedule.Schedule<unknown, unknown> | undefined
  /**
   * The longest wait between two tries of a model (default 2 s): a 429's `Retry-After` up to this is
   * waited for (when longer than the schedule's delay); a longer one moves on to the next model at once.
   */
  readonly maxDelay?: Duration.DurationInput | undefined
  /**
   * A model that has not sent its first part (streamed) or its answer (not streamed) after this long is
   * a retryable failure (default 30 s).
   */
  readonly firstTokenTimeout?: Duration.DurationInput | undefined
}

/** The model that answered a call (its last step's, for a call of several steps). */
export interface ModelRef {
  readonly provider: string
  readonly modelId: string
}

/** A model that sent nothing within `firstTokenTimeout`. */
export class FirstTokenTimeout extends Data.TaggedError("FirstTokenTimeout")<{ readonly message: string }> {
  override get name() {
    return "FirstTokenTimeout"
  }
}

export const DEFAULT_MAX_DELAY = Duration.seconds(2)
export const DEFAULT_FIRST_TOKEN_TIMEOUT = Duration.seconds(30)

/** 2 retries, 200 ms then 400 ms (exponential from 200 ms, never more than `maxDelay`). */
export const defaultRetry = (maxDelay: Duration.Duration = DEFAULT_MAX_DELAY): Schedule.Schedule<unknown, unknown> =>
  Schedule.exponential("200 millis").pipe(
    Schedule.union(Schedule.spaced(maxDelay)),
    Schedule.intersect(Schedule.recurs(2))
  )

/** `gen_ai.provider.name` from the SDK's provider id ("openai.chat" is OpenAI's chat API). */
const providerName = (provider: string): string => provider.split(".")[0] ?? provider

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNABORTED",
  "UND_ERR_SOCKET"
])

const networkCode = (error: unknown, depth = 0): string | undefined => {
  if (typeof error !== "object" || error === null || depth > 4) return undefined
  const code = (error as { readonly code?: unknown }).code
  if (typeof code === "string" && NETWORK_CODES.has(code)) return code
  return networkCode((error as { readonly cause?: unknown }).cause, depth + 1)
}

/**
 * Retryable: connection errors, 408, 429, 5xx and the first-token timeout. Anything else (4xx, the
 * caller's abort, a bad answer) is not: another try would fail the same way.
 */
export const isRetryable = (error: unknown): boolean => {
  if (error instanceof FirstTokenTimeout) return true
  if (APICallError.isInstance(error)) {
    const status = error.statusCode
    if (status === undefined) return error.isRetryable || networkCode(error) !== undefined
    // A 2xx whose body could not be read: retryable when the connection broke.
    if (status < 400) return networkCode(error) !== undefined
    return status === 408 || status === 429 || status >= 500
  }
  return networkCode(error) !== undefined
}

/** A short, bounded name for a failure (a status, a network code, the timeout): span events and metric labels. */
export const failureKind = (error: unknown): string =>
  error instanceof FirstTokenTimeout ?
    "timeout"
    : APICallError.isInstance(error) && error.statusCode !== undefined ?
    String(error.statusCode)
    : networkCode(error) ?? "other"

/** What a 429's (or 503's) `Retry-After` asks for, in ms (seconds or an HTTP date; `retry-after-ms` first). */
export const retryAfterMillis = (error: unknown): number | undefined => {
  if (!APICallError.isInstance(error) || error.responseHeaders === undefined) return undefined
  // A header the response did not send is undefined, whatever the record's type says.
  const headers: Readonly<Record<string, string | undefined>> = error.responseHeaders
  const ms = Number(headers["retry-after-ms"])
  if (headers["retry-after-ms"] !== undefined && Number.isFinite(ms)) return Math.max(0, ms)
  const value = headers["retry-after"]
  if (value === undefined) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** The policy's schedule, made to honour `Retry-After` up to `maxDelay` (beyond it: no more tries of this model). */
const retrySchedule = (policy: FallbackPolicy): Schedule.Schedule<unknown, unknown> => {
  const maxDelay = Duration.decode(policy.maxDelay ?? DEFAULT_MAX_DELAY)
  const maxMillis = Duration.toMillis(maxDelay)
  return (policy.retry ?? defaultRetry(maxDelay)).pipe(
    Schedule.intersect(Schedule.identity<unknown>()),
    Schedule.whileOutput(([, error]) => (retryAfterMillis(error) ?? 0) <= maxMillis),
    Schedule.modifyDelay(([, error], delay) => Duration.max(delay, Duration.millis(retryAfterMillis(error) ?? 0)))
  )
}

/** A signal aborted when `signal` is, or when `controller` aborts itself (the timeout). */
const linked = (signal: AbortSignal | undefined, controller: AbortController) => {
  if (signal === undefined) return () => undefined
  if (signal.aborted) controller.abort(signal.reason)
  const abort = () => controller.abort(signal.reason)
  signal.addEventListener("abort", abort, { once: true })
  return () => signal.removeEventListener("abort", abort)
}

const rejectedOnAbort = (signal: AbortSignal) => {
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason)
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true })
  })
  aborted.catch(() => undefined)
  return aborted
}

/** The first failure that explains an attempt: the timeout when it fired, else what the provider threw. */
const explained = (controller: AbortController, error: unknown) =>
  controller.signal.reason instanceof FirstTokenTimeout ? controller.signal.reason : error

const deadline = (controller: AbortController, timeout: Duration.Duration, modelId: string) =>
  setTimeout(
    () =>
      controller.abort(new FirstTokenTimeout({ message: `${modelId} sent nothing in ${Duration.format(timeout)}` })),
    Duration.toMillis(timeout)
  )

const generateOnce = async (
  model: LanguageModelV4,
  params: LanguageModelV4CallOptions,
  attemptSignal: AbortSignal,
  timeout: Duration.Duration
): Promise<LanguageModelV4GenerateResult> => {
  const controller = new AbortController()
  const unlink = linked(params.abortSignal, controller)
  const unlinkAttempt = linked(attemptSignal, controller)
  const timer = deadline(controller, timeout, model.modelId)
  try {
    return await Promise.race([
      model.doGenerate({ ...params, abortSignal: controller.signal }),
      rejectedOnAbort(controller.signal)
    ])
  } catch (error) {
    throw explained(controller, error)
  } finally {
    clearTimeout(timer)
    unlink()
    unlinkAttempt()
  }
}

/** Parts that carry no answer yet: until one that does, the attempt may still be retried. */
const PREAMBLE = new Set<LanguageModelV4StreamPart["type"]>(["stream-start", "response-metadata", "raw"])

/**
 * One streamed attempt: it succeeds once the model sent a part of its answer (or ended), which is
 * held back with what came before it and replayed in front of the rest; before that, a failure (a
 * thrown error, an `error` part, the first-token timeout) fails the attempt.
 */
const streamOnce = async (
  model: LanguageModelV4,
  params: LanguageModelV4CallOptions,
  attemptSignal: AbortSignal,
  timeout: Duration.Duration
): Promise<LanguageModelV4StreamResult> => {
  const controller = new AbortController()
  // Linked to the caller's signal for the stream's whole life; to the attempt's only until it succeeds.
  linked(params.abortSignal, controller)
  const unlinkAttempt = linked(attemptSignal, controller)
  const timer = deadline(controller, timeout, model.modelId)
  const aborted = rejectedOnAbort(controller.signal)
  let reader: ReadableStreamDefaultReader<LanguageModelV4StreamPart> | undefined
  try {
    const result = await Promise.race([model.doStream({ ...params, abortSignal: controller.signal }), aborted])
    reader = result.stream.getReader()
    const head: Array<LanguageModelV4StreamPart> = []
    let done = false
    for (;;) {
      const next = await Promise.race([reader.read(), aborted])
      if (next.done) {
        done = true
        break
      }
      if (next.value.type === "error") throw next.value.error
      head.push(next.value)
      if (!PREAMBLE.has(next.value.type)) break
    }
    const rest = reader
    return {
      ...result,
      stream: new ReadableStream<LanguageModelV4StreamPart>({
        async pull(out) {
          const held = head.shift()
          if (held !== undefined) return out.enqueue(held)
          if (done) return out.close()
          try {
            const next = await rest.read()
            if (next.done) out.close()
            else out.enqueue(next.value)
          } catch (error) {
            out.error(error)
          }
        },
        cancel: (reason) => rest.cancel(reason)
      }, { highWaterMark: 0 })
    }
  } catch (error) {
    reader?.cancel().catch(() => undefined)
    if (!controller.signal.aborted) controller.abort(error)
    throw explained(controller, error)
  } finally {
    clearTimeout(timer)
    unlinkAttempt()
  }
}

interface Candidate {
  /** The model as called (traced: a span per attempt). */
  readonly model: LanguageModelV4
  readonly ref: ModelRef
}

const answeredBy = new WeakMap<LanguageModelV4, { current: ModelRef }>()

/** The model that answered a call made with `model` (the fallback model's last answering one). */
export const answeringModel = (model: LanguageModelV4): ModelRef =>
  answeredBy.get(model)?.current ?? { provider: providerName(model.provider), modelId: model.modelId }

const isSpan = (span: Tracer.AnySpan): span is Tracer.Span => span._tag === "Span"

/**
 * The models as one: each call tries the candidates in order under the policy, and remembers which
 * answered (`answeringModel`). Each candidate's model is already traced (a `chat` span per attempt).
 * The agent call's span (`parent`) gets an event per failed attempt and per fall-over, and after each
 * model call the call's attempts so far and the answering model.
 */
export const fallbackModel = (
  candidates: ReadonlyArray<Candidate>,
  policy: FallbackPolicy,
  agentId: string,
  parent: Option.Option<Tracer.AnySpan>,
  runtime: Runtime.Runtime<never>
): LanguageModelV4 => {
  const schedule = retrySchedule(policy)
  const timeout = Duration.decode(policy.firstTokenTimeout ?? DEFAULT_FIRST_TOKEN_TIMEOUT)
  const span = Option.filter(parent, isSpan)
  const answered = { current: candidates[0]!.ref }
  let attempts = 0

  const note = (name: string, attributes: Record<string, unknown>) =>
    Effect.clockWith((clock) =>
      Effect.sync(() => {
        if (Option.isSome(span)) span.value.event(name, clock.unsafeCurrentTimeNanos(), attributes)
      })
    )

  const tryAll = <A>(once: (model: LanguageModelV4, signal: AbortSignal) => Promise<A>) =>
    Effect.gen(function*() {
      for (const [index, candidate] of candidates.entries()) {
        const exit = yield* Effect.tryPromise({
          try: (signal) => {
            attempts++
            return once(candidate.model, signal)
          },
          catch: (error) => error
        }).pipe(
          Effect.tapError((error) =>
            isRetryable(error)
              ? Effect.zipRight(
                note("gen_ai.model.attempt.failed", {
                  "gen_ai.request.model": candidate.ref.modelId,
                  "gen_ai.provider.name": candidate.ref.provider,
                  "error.type": failureKind(error)
                }),
                countModelAttemptFailure(agentId, candidate.ref.modelId)
              )
              : Effect.void
          ),
          Effect.retry({ schedule, while: isRetryable }),
          Effect.exit
        )
        if (Exit.isSuccess(exit)) {
          answered.current = candidate.ref
          return exit.value
        }
        const error = Cause.squash(exit.cause)
        if (index === candidates.length - 1 || !isRetryable(error)) return yield* Effect.failCause(exit.cause)
        yield* countModelFallback(agentId, candidate.ref.modelId, failureKind(error))
        yield* note("gen_ai.model.fallback", {
          "gen_ai.request.model": candidate.ref.modelId,
          "gen_ai.fallback.model": candidates[index + 1]!.ref.modelId,
          "error.type": failureKind(error)
        })
      }
      return yield* Effect.dieMessage("no model to try")
    })

  const run = async <A>(
    signal: AbortSignal | undefined,
    once: (model: LanguageModelV4, signal: AbortSignal) => Promise<A>
  ) => {
    const exit = await Runtime.runPromiseExit(runtime)(tryAll(once), signal === undefined ? {} : { signal })
    if (Option.isSome(span)) {
      span.value.attribute("gen_ai.model.attempts", attempts)
      span.value.attribute("gen_ai.response.model", `${answered.current.provider}/${answered.current.modelId}`)
    }
    if (Exit.isSuccess(exit)) return exit.value
    if (signal?.aborted) throw signal.reason
    throw Cause.squash(exit.cause)
  }

  const first = candidates[0]!.model
  const model: LanguageModelV4 = {
    specificationVersion: "v4",
    provider: first.provider,
    modelId: first.modelId,
    supportedUrls: first.supportedUrls,
    doGenerate: (params) => run(params.abortSignal, (m, signal) => generateOnce(m, params, signal, timeout)),
    doStream: (params) => run(params.abortSignal, (m, signal) => streamOnce(m, params, signal, timeout))
  }
  answeredBy.set(model, answered)
  return model
}

export const modelRef = (model: { readonly provider: string; readonly modelId: string }): ModelRef => ({
  provider: providerName(model.provider),
  modelId: model.modelId
})
