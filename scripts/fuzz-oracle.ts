/**
 * What every answer to a fuzzed request must look like: the JSON envelope, a 2xx or a 4xx, and a 500
 * only where the route declares one and for one of the declared failures (a tool, an agent or a
 * workflow that failed), never `Internal server error`.
 */
import type { FuzzCase } from "./fuzz-cases.js"

export interface Answer {
  readonly status: number
  readonly contentType: string
  /** Undefined for an event stream (only its status and headers are read). */
  readonly body: string | undefined
}

export type Outcome = { readonly answer: Answer } | { readonly error: string }

/** The messages of the 500s the API declares (ExecutionFailed, WorkflowFailed) as the services word them. */
export const DECLARED_FAILURES: ReadonlyArray<RegExp> = [
  /^Tool \S+ failed: /,
  /^Agent \S+ failed: /,
  /^Failed to execute workflow: /,
  /^Could not reach the npm registry /,
  /^npm install /,
  /^Could not run npm: /,
  /^Could not write /
]

/** An error message longer than this echoes client input without bound. */
export const MAX_ERROR_MESSAGE = 4_096

const excerpt = (
  text: string,
  max = 200
) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text)

interface Envelope {
  readonly success: boolean
  readonly error?: unknown
  readonly data?: unknown
}

const parse = (body: string | undefined): unknown => {
  if (body === undefined || body === "") return undefined
  try {
    return JSON.parse(body)
  } catch {
    return undefined
  }
}

const asEnvelope = (value: unknown): Envelope | undefined =>
  typeof value === "object" && value !== null && typeof (value as Envelope).success === "boolean"
    ? value as Envelope
    : undefined

const isJsonRpcError = (value: unknown) =>
  typeof value === "object" && value !== null && (value as { jsonrpc?: unknown }).jsonrpc === "2.0" &&
  typeof (value as { error?: { message?: unknown } }).error?.message === "string"

const failureMessage = (envelope: Envelope | undefined): string | undefined =>
  envelope?.success === false && typeof envelope.error === "string" && envelope.error.length > 0
    ? envelope.error
    : undefined

/** Undefined when the answer is acceptable, else what is wrong with it. */
export const judge = (fuzz: FuzzCase, outcome: Outcome, jwt: boolean): string | undefined => {
  if ("error" in outcome) return outcome.error
  const { status, contentType, body } = outcome.answer
  const parsed = parse(body)
  const envelope = asEnvelope(parsed)
  const message = failureMessage(envelope)
  const shown = body === undefined ? "<event stream>" : excerpt(body)

  if (jwt && fuzz.route.routeClass === "execution" && fuzz.auth !== "valid") {
    // A URL with NUL is malformed: it is refused (400) before authentication, like an unparseable request.
    const malformedUrl = status === 400 && fuzz.mutation.endsWith("+nul-in-path")
    if ((status === 401 || (status === 404 && fuzz.garbagePath) || malformedUrl) && message !== undefined) {
      return undefined
    }
    return `expected 401 without a valid token (${fuzz.auth}), got ${status}: ${shown}`
  }
  if (status === 401) return `401 on a request that needs no token or has a valid one: ${shown}`

  if (status >= 200 && status < 300) {
    if (fuzz.mustReject) return `accepted (${status}) a request that must be refused: ${shown}`
    switch (fuzz.route.responseKind) {
      case "event-stream":
        return contentType.includes("text/event-stream") || envelope?.success === true
          ? undefined
          : `${status} is neither an event stream nor the envelope: ${shown}`
      case "envelope":
        return envelope?.success === true && "data" in envelope
          ? undefined
          : `${status} without the success envelope: ${shown}`
      case "protocol":
        return body === "" || body === undefined || parsed !== undefined
          ? undefined
          : `${status} body is not JSON: ${shown}`
    }
  }

  if (status >= 400 && status < 500) {
    if (message !== undefined) {
      return message.length > MAX_ERROR_MESSAGE
        ? `${status} error message of ${message.length} chars: ${excerpt(message)}`
        : undefined
    }
    if (fuzz.route.responseKind === "protocol" && isJsonRpcError(parsed)) return undefined
    return `${status} without the error envelope: ${shown}`
  }

  if (status === 500) {
    if (message === undefined) return `500 without the error envelope: ${shown}`
    if (message === "Internal server error") return "500 Internal server error"
    if (!fuzz.route.declares500) return `500 on a route that declares none: ${excerpt(message)}`
    if (fuzz.mustReject) return `500 for a request that must be refused with a 4xx: ${excerpt(message)}`
    if (!DECLARED_FAILURES.some((pattern) => pattern.test(message))) {
      return `500 with an undeclared message: ${excerpt(message)}`
    }
    return message.length > MAX_ERROR_MESSAGE
      ? `500 error message of ${message.length} chars: ${excerpt(message)}`
      : undefined
  }
  return `unexpected status ${status}: ${shown}`
}
