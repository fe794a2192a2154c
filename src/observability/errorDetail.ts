import { Data, Effect, Schema, type Tracer } from "effect"
import type { ErrorDetail } from "../core/errorDetail.js"
import { messageOf } from "../core/errorMessages.js"
import { capString, capValue, jsonSize, redactQueries, VALUE_CAP } from "./Redaction.js"

/** Keys of an error object that are not its fields. */
const NOT_FIELDS: ReadonlySet<string> = new Set(["_tag", "message", "stack", "name"])
/** Nesting past this is recorded as its type name. */
const MAX_DEPTH = 16

const typeName = (value: unknown): string => {
  if (typeof value !== "object" || value === null) return typeof value
  return (value as object).constructor?.name || "object"
}

const isPlain = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return Array.isArray(value) || proto === Object.prototype || proto === null
}

/**
 * The value as JSON carries it unchanged: what JSON cannot carry (a bigint, a function, a Date, a Map,
 * a class instance, a cycle, a non-finite number) becomes its type name, strings are redacted as span
 * values are (query parameters off the allow-list).
 */
const safeJson = (value: unknown, seen: Set<object>, depth: number): unknown => {
  switch (typeof value) {
    case "string":
      return redactQueries(value)
    case "boolean":
      return value
    case "number":
      return Number.isFinite(value) ? value : String(value)
    case "object":
      break
    default:
      return typeName(value)
  }
  if (value === null) return null
  if (!isPlain(value) || depth > MAX_DEPTH) return typeName(value)
  if (seen.has(value)) return "[Circular]"
  seen.add(value)
  const out = Array.isArray(value)
    ? value.map((item) => safeJson(item, seen, depth + 1))
    : Object.fromEntries(
      Object.entries(value).flatMap(([key, item]) => item === undefined ? [] : [[key, safeJson(item, seen, depth + 1)]])
    )
  seen.delete(value)
  return out
}

const TRUNCATED = "[truncated]"
const MIN_STRING_ROOM = 128

/**
 * The most a detail's fields take as JSON: within VALUE_CAP with room for the tag beside them, so that a
 * log entry's `{ _tag, fields }` is one recordable value.
 */
export const FIELDS_CAP = VALUE_CAP - 256
const TAG_CAP = 128

/** The fields within FIELDS_CAP in all: each capped as a span value is, those past the budget marked truncated. */
const cappedFields = (fields: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  let left = FIELDS_CAP - 2
  for (const [key, value] of Object.entries(fields)) {
    let capped = capValue(value)
    let size = jsonSize(key) + jsonSize(capped) + 2
    if (size > left) {
      // A long string keeps what fits of its beginning; anything else that does not fit is marked.
      const room = left - jsonSize(key) - 2
      capped = typeof value === "string" && room >= MIN_STRING_ROOM ? capString(value, room) : TRUNCATED
      size = jsonSize(key) + jsonSize(capped) + 2
      if (size > left) break
    }
    out[key] = capped
    left -= size
  }
  return out
}

const tagOf = (error: object): string | undefined => {
  const tag = (error as { readonly _tag?: unknown })._tag
  return typeof tag === "string" && tag !== "" ? capString(tag, TAG_CAP) : undefined
}

/**
 * The error's message, "" without one. A `Schema.TaggedError` without a `message` field derives one
 * from its fields (`{ "ticketId": "T-9" }`), which names no tag: that is no message of its own.
 */
const ownMessage = (error: object): string => {
  const make: unknown = error.constructor
  const fields = Schema.isSchema(make) ? (make as { readonly fields?: unknown }).fields : undefined
  if (typeof fields === "object" && fields !== null && !("message" in fields)) return ""
  const message = (error as { readonly message?: unknown }).message
  return typeof message === "string" ? message : ""
}

/**
 * The detail of what user code failed with, when it is a tagged error (`Data.TaggedError`,
 * `Schema.TaggedError`, Effect's own); undefined for anything else: a plain Error or a thrown string
 * says all it has in its message, and their envelopes stay as they were. The message is the error's,
 * or, when it has none, its tag and fields (`TicketNotFound {"ticketId":"T-9"}`).
 */
export const errorDetailOf = (error: unknown): ErrorDetail | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const tag = tagOf(error)
  if (tag === undefined) return undefined
  const raw: Record<string, unknown> = {}
  for (const key of Object.keys(error)) {
    if (!NOT_FIELDS.has(key)) raw[key] = (error as Record<string, unknown>)[key]
  }
  const fields = cappedFields(safeJson(raw, new Set(), 1) as Record<string, unknown>)
  const own = ownMessage(error)
  const message = own !== "" ? own : Object.keys(fields).length === 0 ? tag : `${tag} ${JSON.stringify(fields)}`
  return { _tag: tag, message: capString(message), fields }
}

/** The message of a failure: an error's own, else (a tagged error without one) its tag and fields. */
export const failureMessage = (error: unknown, detail: ErrorDetail | undefined = errorDetailOf(error)): string => {
  if (typeof error === "object" && error !== null && ownMessage(error) !== "") return ownMessage(error)
  return detail?.message ?? messageOf(error)
}

/**
 * What a span may record as the failure's message instead of `failureMessage`, when that was made
 * of the error's fields (a tagged error without a message): its tag alone. Undefined when the message
 * is the error's own (or there is no detail): spans record it as they always did.
 */
export const spanMessageOf = (error: unknown, detail: ErrorDetail | undefined): string | undefined =>
  detail === undefined || (typeof error === "object" && error !== null && ownMessage(error) !== "")
    ? undefined
    : detail._tag

const SPAN_MESSAGE = Symbol.for("effect-agent-server/spanMessage")

/**
 * Marks `failure` with the message a span records instead of its own (see withoutFieldsInSpan). A
 * property of the error rather than a map keyed by it: Effect hands failures on behind a proxy.
 */
export const markSpanMessage = <E extends object>(failure: E, message: string | undefined): E => {
  if (message !== undefined) Object.defineProperty(failure, SPAN_MESSAGE, { value: message, enumerable: false })
  return failure
}

/** The message `markSpanMessage` gave the failure, if any. */
export const markedSpanMessage = (failure: unknown): string | undefined => {
  const message = typeof failure === "object" && failure !== null
    ? (failure as { readonly [SPAN_MESSAGE]?: unknown })[SPAN_MESSAGE]
    : undefined
  return typeof message === "string" ? message : undefined
}

/**
 * `error` (a message ending with the detail's message) as a span may record it: when the detail's
 * message was made of its fields (`Tag {...}`), that end is the tag alone; else undefined (as it is).
 */
export const spanSafeError = (error: string, detail: ErrorDetail | undefined): string | undefined => {
  if (detail === undefined || !error.endsWith(detail.message)) return undefined
  const derived = detail.message === detail._tag || detail.message.startsWith(`${detail._tag} {`)
  return derived && detail.message !== detail._tag
    ? `${error.slice(0, error.length - detail.message.length)}${detail._tag}`
    : undefined
}

/** A failure as a span sees it: the original's name, a message without its fields. */
class SpanFailure extends Data.Error<{ readonly name: string; readonly message: string; readonly failure: unknown }> {}

/**
 * Runs `effect` in the span `name` where a failure whose message was made of user data (`spanMessage`
 * answers the message the span records instead) ends the span with that message, and leaves it as it
 * was: a span's status and exception event carry the failure's message, and an error's fields are
 * recorded only with `recordContent`.
 */
export const withoutFieldsInSpan = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  name: string,
  options: Tracer.SpanOptions,
  spanMessage: (error: E) => string | undefined
): Effect.Effect<A, E, Exclude<R, Tracer.ParentSpan>> =>
  effect.pipe(
    Effect.mapError((error): E | SpanFailure => {
      const message = spanMessage(error)
      if (message === undefined) return error
      const name = (error as { readonly _tag?: unknown })._tag
      return new SpanFailure({ name: typeof name === "string" ? name : "Error", message, failure: error })
    }),
    Effect.withSpan(name, options),
    Effect.mapError((error) => (error instanceof SpanFailure ? error.failure as E : error))
  )
