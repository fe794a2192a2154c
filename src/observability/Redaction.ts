/**
 * What telemetry may record. Spans and log entries are stored, pushed to live sockets and exported, so
 * secrets are kept out by an allow-list (a header or query parameter not named here is recorded as
 * `[redacted]`: the key stays, the value goes), and every recorded value and span is size-capped.
 */

export const REDACTED = "[redacted]"
/** The most one recorded value may take: UTF-8 bytes of its JSON encoding. */
export const VALUE_CAP = 8 * 1024
/** The most one span's status message, attributes and events may take together. */
export const SPAN_CAP = 64 * 1024
/** The most one log entry's message and attributes may take together (the log keeps 5,000 entries). */
export const LOG_ENTRY_CAP = 16 * 1024

/** Headers whose values are recorded (requests and responses); all others are redacted. */
const RECORDED_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "access-control-request-headers",
  "access-control-request-method",
  "cache-control",
  "connection",
  "content-encoding",
  "content-length",
  "content-type",
  "host",
  "last-event-id",
  "origin",
  "sec-websocket-version",
  "traceparent",
  "tracestate",
  "transfer-encoding",
  "upgrade",
  "user-agent",
  "x-request-id",
  "x-vercel-ai-ui-message-stream",
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-expose-headers",
  "etag",
  "location",
  "retry-after",
  "vary"
])

/** Query parameters whose values are recorded: the ones this API declares, except credentials. */
const RECORDED_QUERY_KEYS: ReadonlySet<string> = new Set([
  "after",
  "agentId",
  "conversationId",
  "dev",
  "entityId",
  "entityType",
  "executionId",
  "from",
  "level",
  "limit",
  "offset",
  "page",
  "since",
  "spanId",
  "status",
  "to",
  "traceId",
  "until",
  "userId",
  "workflowId"
])

const REQUEST_HEADER = "http.request.header."
const RESPONSE_HEADER = "http.response.header."
const QUERY_PAIR = /([?&])([^=&#\s?]+)=([^&#\s]*)/g

const decodedKey = (key: string): string => {
  if (!key.includes("%")) return key
  try {
    return decodeURIComponent(key)
  } catch {
    return key
  }
}

/** The text with the value of every query parameter outside the allow-list redacted, wherever a query appears. */
export const redactQueries = (text: string): string =>
  text.includes("=")
    ? text.replace(QUERY_PAIR, (pair, separator: string, key: string, value: string) =>
      value === "" || RECORDED_QUERY_KEYS.has(decodedKey(key)) ? pair : `${separator}${key}=${REDACTED}`)
    : text

const redactDeep = (value: unknown): unknown =>
  typeof value === "string" ? redactQueries(value) : Array.isArray(value) ? value.map(redactDeep) : value

/** An attribute's value as it may be recorded (before size caps). */
export const redactAttribute = (key: string, value: unknown): unknown => {
  const header = key.startsWith(REQUEST_HEADER) ?
    key.slice(REQUEST_HEADER.length)
    : key.startsWith(RESPONSE_HEADER) ?
    key.slice(RESPONSE_HEADER.length)
    : undefined
  if (header !== undefined) return RECORDED_HEADERS.has(header.toLowerCase()) ? value : REDACTED
  // `url.query` holds a bare query string, without the leading "?".
  if (key === "url.query" && typeof value === "string") return redactQueries(`?${value}`).slice(1)
  return redactDeep(value)
}

const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** UTF-8 bytes of a value's JSON encoding (what the store and the sockets carry). */
export const jsonSize = (value: unknown): number => {
  // Spans are mostly short ASCII strings and numbers: measure those without encoding them.
  if (typeof value === "string" && value.length < 1024 && PLAIN.test(value)) return value.length + 2
  if (typeof value === "number" || typeof value === "boolean") return String(value).length
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? "null")
  } catch {
    return Buffer.byteLength(String(value))
  }
}

/** At most `cap` bytes of JSON: a longer string keeps its beginning and says how long it was. */
export const capString = (text: string, cap = VALUE_CAP): string => {
  // No character takes more than 6 bytes of JSON (`\u0000`), so short strings need no measuring.
  if (text.length * 6 + 2 <= cap || jsonSize(text) <= cap) return text
  const marker = `…[truncated: ${text.length} characters in all]`
  let low = 0
  let high = Math.min(text.length, cap)
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (jsonSize(text.slice(0, middle) + marker) <= cap) low = middle
    else high = middle - 1
  }
  return text.slice(0, low) + marker
}

/** A value within VALUE_CAP: long strings cut, long arrays shortened, other large values summarised as text. */
export const capValue = (value: unknown): unknown => {
  if (typeof value === "string") return capString(value)
  if (value === null || typeof value !== "object") return value
  if (jsonSize(value) <= VALUE_CAP) return value
  if (Array.isArray(value)) {
    const kept: Array<unknown> = []
    let size = 2
    for (const item of value) {
      const capped = capValue(item)
      const itemSize = jsonSize(capped) + 1
      if (size + itemSize > VALUE_CAP) break
      kept.push(capped)
      size += itemSize
    }
    return kept
  }
  let text: string
  try {
    text = JSON.stringify(value)
  } catch {
    text = String(value)
  }
  return capString(text)
}

/** What is left of a size budget, shared by everything recorded for one span or log entry. */
export interface Budget {
  left: number
}

/**
 * The attributes as they may be recorded: redacted, each value capped, and no more than the budget
 * allows (attributes past it are dropped and counted).
 */
export const recordedAttributes = (
  attributes: Record<string, unknown>,
  budget: Budget
): { readonly attributes: Record<string, unknown>; readonly dropped: number } => {
  const out: Record<string, unknown> = {}
  let dropped = 0
  for (const key in attributes) {
    const value = capValue(redactAttribute(key, attributes[key]))
    const size = jsonSize(key) + jsonSize(value) + 2
    if (size > budget.left) {
      dropped++
      continue
    }
    budget.left -= size
    out[key] = value
  }
  return { attributes: out, dropped }
}

// How an attribute's key decides its recording: a header kept or redacted, the bare query, anything else.
const KEPT_HEADER = 0
const REDACTED_HEADER = 1
const OTHER = 2
const KEY_CLASSES_MAX = 1024
const keyClasses = new Map<string, number>()
const keyClass = (key: string): number => {
  let found = keyClasses.get(key)
  if (found === undefined) {
    const header = key.startsWith(REQUEST_HEADER) ?
      key.slice(REQUEST_HEADER.length)
      : key.startsWith(RESPONSE_HEADER) ?
      key.slice(RESPONSE_HEADER.length)
      : undefined
    found = header === undefined ? OTHER : RECORDED_HEADERS.has(header.toLowerCase()) ? KEPT_HEADER : REDACTED_HEADER
    if (keyClasses.size < KEY_CLASSES_MAX) keyClasses.set(key, found)
  }
  return found
}

/**
 * The JSON size of the attributes when every one of them is recorded as it is (nothing redacted or
 * capped), or undefined when some attribute would change. Most spans' attributes need no change, and
 * then they need no copy either.
 */
export const unchangedSize = (attributes: Record<string, unknown>): number | undefined => {
  let size = 0
  for (const key in attributes) {
    const value = attributes[key]
    const kind = keyClass(key)
    if (typeof value === "string") {
      if (kind === REDACTED_HEADER) {
        if (value !== REDACTED) return undefined
      } else if (kind === OTHER && value.includes("=")) {
        // Only text holding a query can be redacted (a header's value is kept or redacted whole).
        if (redactAttribute(key, value) !== value) return undefined
      }
      if (value.length * 6 + 2 > VALUE_CAP && capString(value) !== value) return undefined
    } else if (typeof value === "object" && value !== null) {
      return undefined
    } else if (kind === REDACTED_HEADER) {
      return undefined
    }
    size += jsonSize(key) + jsonSize(value) + 2
  }
  return size
}
