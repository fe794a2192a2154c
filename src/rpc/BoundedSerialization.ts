import { RpcSerialization } from "@effect/rpc"
import { Layer } from "effect"
import { excerpt } from "../core/errors.js"

/**
 * JSON messages, as `RpcSerialization.layerJson`, with the failures the server sends bounded: a payload
 * that does not decode is answered with the schema's report, which quotes the value it got (`actual ...`),
 * and an unknown tag or request id is quoted back whole, so 5 MB in came back as 5 to 15 MB. Every string
 * of a failure (an Exit's cause, a connection's Defect) is cut line by line to excerpts, as the HTTP errors
 * quote client values; typed errors are the services' own, whose messages are bounded where they are made.
 */

/** A line of a failure keeps this many characters, and a failure this many lines. */
const LINE_CHARS = 512
const LINES = 24
/** A failure whose bounded JSON is still longer than this (many strings) is sent as one excerpt of it. */
const MAX_FAILURE_CHARS = 8 * 1024

const boundedText = (text: string): string => {
  const lines = text.split("\n")
  const kept = lines.slice(0, LINES).map((line) => excerpt(line, LINE_CHARS))
  return lines.length > LINES ? [...kept, `… (${lines.length - LINES} more lines)`].join("\n") : kept.join("\n")
}

const boundedStrings = (value: unknown): unknown => {
  if (typeof value === "string") return boundedText(value)
  if (Array.isArray(value)) return value.map(boundedStrings)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [excerpt(key, 40), boundedStrings(item)]))
}

const boundedFailure = (failure: unknown): unknown => {
  const bounded = boundedStrings(failure)
  const text = JSON.stringify(bounded) ?? ""
  return text.length <= MAX_FAILURE_CHARS ? bounded : excerpt(text, MAX_FAILURE_CHARS)
}

interface Message {
  readonly _tag?: unknown
  readonly exit?: { readonly _tag?: unknown; readonly cause?: unknown }
  readonly defect?: unknown
}

const bounded = (response: unknown): unknown => {
  if (typeof response !== "object" || response === null) return response
  const message = response as Message
  if (message._tag === "Defect") return { ...message, defect: boundedFailure(message.defect) }
  if (message._tag === "Exit" && message.exit?._tag === "Failure") {
    const cause = boundedFailure(message.exit.cause)
    // An over-long cause becomes one defect carrying its excerpt.
    return {
      ...message,
      exit: { ...message.exit, cause: typeof cause === "string" ? { _tag: "Die", defect: cause } : cause }
    }
  }
  return response
}

export const boundedJson = RpcSerialization.RpcSerialization.of({
  ...RpcSerialization.json,
  unsafeMake: () => {
    const parser = RpcSerialization.json.unsafeMake()
    return { decode: parser.decode, encode: (response) => parser.encode(bounded(response)) }
  }
})

export const BoundedJsonLive = Layer.succeed(RpcSerialization.RpcSerialization, boundedJson)
