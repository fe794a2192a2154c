import { createHash } from "node:crypto"
import { formatBytes } from "../../core/bytes.js"
import { jsonText, stringify } from "../../core/jsonText.js"

/**
 * Values stored once (issue #27): a workflow's data flows from step to step, and every event and
 * checkpoint held a copy of it, so one 8 MB input became hundreds of MB of rows. Before a value is
 * stored, each part of it (a string, an array, an object) whose JSON, as written, reaches VALUE_THRESHOLD characters is
 * written once per execution in `workflow_values`, keyed by the hash of its text, and the value refers
 * to it by `{"$v":"<hash>"}` (bottom-up, so a part refers to the parts within it). A text holding
 * references starts with `~`, which no JSON text starts with: every row written before, and every
 * value with no large part, is plain JSON as it was. An object of the value that has a key `$v` of its
 * own is written `{"$v":0,"o":<the object>}`.
 */

export const VALUE_THRESHOLD = 1024
const MARK = "$v"
const PREFIX = "~"

export interface Externalized {
  /** The stored text: plain JSON, or `~` and JSON with references. */
  readonly text: string
  /** The parts it refers to, by hash: their texts (JSON with references, no prefix). */
  readonly values: ReadonlyMap<string, string>
  /** The UTF-8 length of the value's JSON as it is read back. */
  readonly bytes: number
}

interface Encoded {
  readonly text: string
  readonly bytes: number
}

export { formatBytes } from "../../core/bytes.js"

const hashOf = (text: string) => createHash("sha256").update(text).digest("base64url")

/** `value` as JSON.stringify writes it, with its large parts stored apart (undefined: JSON's `null`). */
export const externalize = (value: unknown): Externalized => {
  // The common case, a small value without a `$v` key, is its JSON (native, and byte for byte as before).
  const whole = jsonText(value)
  if (whole.length < VALUE_THRESHOLD && !whole.includes(`"${MARK}"`)) {
    return { text: whole, values: new Map(), bytes: Buffer.byteLength(whole) }
  }
  const values = new Map<string, string>()
  let marked = false
  const plain = (text: string): Encoded => ({ text, bytes: Buffer.byteLength(text) })
  const apart = (encoded: Encoded, root: boolean): Encoded => {
    // Measured as written (parts within already refer to theirs), so a part made of references stays inline.
    if (root || encoded.text.length < VALUE_THRESHOLD) return encoded
    const hash = hashOf(encoded.text)
    values.set(hash, encoded.text)
    marked = true
    return { text: `{"${MARK}":"${hash}"}`, bytes: encoded.bytes }
  }
  const encode = (node: unknown, root: boolean): Encoded | undefined => {
    const json =
      node !== null && typeof node === "object" && typeof (node as { toJSON?: unknown }).toJSON === "function"
        ? (node as { toJSON: () => unknown }).toJSON()
        : node
    if (json === undefined || typeof json === "function" || typeof json === "symbol") return undefined
    if (json === null || typeof json !== "object") {
      const text = stringify(json)
      return text === undefined ? undefined : apart(plain(text), root)
    }
    const parts: Array<string> = []
    let bytes = 2
    if (Array.isArray(json)) {
      for (const item of json) {
        const encoded = encode(item, false) ?? { text: "null", bytes: 4 }
        parts.push(encoded.text)
        bytes += encoded.bytes
      }
      bytes += Math.max(0, parts.length - 1)
      return apart({ text: `[${parts.join(",")}]`, bytes }, root)
    }
    let fields = 0
    for (const [key, item] of Object.entries(json)) {
      const encoded = encode(item, false)
      if (encoded === undefined) continue
      const name = JSON.stringify(key)
      const nameBytes = Buffer.byteLength(name)
      parts.push(`${name}:${encoded.text}`)
      bytes += nameBytes + 1 + encoded.bytes
      fields++
    }
    bytes += Math.max(0, fields - 1)
    let text = `{${parts.join(",")}}`
    if (Object.hasOwn(json, MARK)) {
      text = `{"${MARK}":0,"o":${text}}`
      marked = true
    }
    return apart({ text, bytes }, root)
  }
  const encoded = encode(value, true) ?? { text: "null", bytes: 4 }
  return { text: marked ? PREFIX + encoded.text : encoded.text, values, bytes: encoded.bytes }
}

/** Whether a stored text holds references (else it is plain JSON). */
export const hasReferences = (text: string) => text.startsWith(PREFIX)

/** The hashes a parsed text with references refers to directly. */
export const referencesIn = (parsed: unknown, into: Set<string> = new Set()): Set<string> => {
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== "object") return
    if (Array.isArray(node)) return node.forEach(walk)
    if (Object.hasOwn(node, MARK)) {
      const mark = (node as Record<string, unknown>)[MARK]
      if (typeof mark === "string") into.add(mark)
      else Object.values((node as { o: object }).o).forEach(walk)
      return
    }
    Object.values(node).forEach(walk)
  }
  walk(parsed)
  return into
}

/**
 * A parsed text with references, its references replaced by their values (`found`: the parsed
 * texts of every value it refers to, directly or not). A value referred to twice is one object.
 */
export const revive = (parsed: unknown, found: ReadonlyMap<string, unknown>): unknown => {
  const done = new Map<string, unknown>()
  const walk = (node: unknown): unknown => {
    if (node === null || typeof node !== "object") return node
    if (Array.isArray(node)) return node.map(walk)
    if (Object.hasOwn(node, MARK)) {
      const mark = (node as Record<string, unknown>)[MARK]
      if (typeof mark !== "string") return fields((node as { o: object }).o)
      if (done.has(mark)) return done.get(mark)
      if (!found.has(mark)) throw new Error(`stored value ${mark} is missing`)
      const value = walk(found.get(mark))
      done.set(mark, value)
      return value
    }
    return fields(node)
  }
  const fields = (node: object) => Object.fromEntries(Object.entries(node).map(([key, value]) => [key, walk(value)]))
  return walk(parsed)
}

/** A stored text's parsed JSON (the prefix dropped). */
export const parseStored = (text: string): unknown => JSON.parse(hasReferences(text) ? text.slice(PREFIX.length) : text)

/** The UTF-8 length of `value`'s JSON (what a reader of it receives). */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(jsonText(value) ?? "null")

/** The bounds of what an execution stores (documented in README and docs/decisions.md). */
export const MAX_INPUT_BYTES = 1024 * 1024
export const MAX_STEP_OUTPUT_BYTES = 4 * 1024 * 1024
/** Of a suspension's data as JSON (issue #30: shown to whoever resumes it). */
export const MAX_SUSPEND_DATA_BYTES = 64 * 1024
/** Of an execution's events as JSON: what it stores before sharing values, and what a reader of them receives. */
export const MAX_HISTORY_BYTES = 32 * 1024 * 1024
/** A listing shows a record whole when its events are at most this size; else a summary (input, output, events' values left out). */
export const LISTING_WHOLE_BYTES = 64 * 1024

/**
 * Why a step's output may not be stored, if it may not: over MAX_STEP_OUTPUT_BYTES, or taking the
 * history (`history`: its size once the output is in, counted twice: its step-complete and what
 * follows) over `maxBytes` (workflows.maxExecutionBytes).
 */
export const outputRefusal = (outputBytes: number, history: number, maxBytes: number): string | undefined =>
  outputBytes > MAX_STEP_OUTPUT_BYTES
    ? `its output is ${formatBytes(outputBytes)}, over the ${formatBytes(MAX_STEP_OUTPUT_BYTES)} a step's output may be`
    : history > maxBytes
    ? `the execution's history would be ${formatBytes(history)}, over the ${
      formatBytes(maxBytes)
    } of workflows.maxExecutionBytes`
    : undefined
