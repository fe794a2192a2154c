import { Schema } from "effect"
import { ErrorDetail } from "./errorDetail.js"

export { messageOf, messageWithCause } from "./errorMessages.js"

/**
 * The errors every service fails with. Each carries the message the client sees; the HTTP status is
 * attached where the API declares them (src/http/Errors.ts), not here.
 */

export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/** Client values quoted in messages are cut to this many characters. */
const EXCERPT_CHARS = 120
/** At most this many issues are spelled out in one message. */
const LISTED_ISSUES = 10

/** `text` when short; else its start, an ellipsis and its full length, so a huge input is never echoed whole. */
export const excerpt = (text: string, max = EXCERPT_CHARS): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`

// Effect's messages end with `actual <the value as JSON>`; a quoted string keeps its quotes around the excerpt.
const boundedMessage = (message: string): string => {
  const at = message.indexOf(", actual ")
  if (at === -1) return excerpt(message, 3 * EXCERPT_CHARS)
  const actual = message.slice(at + ", actual ".length)
  const quoted = actual.length > EXCERPT_CHARS + 2 && actual.startsWith("\"") && actual.endsWith("\"")
  const shown = quoted
    ? `"${actual.slice(1, EXCERPT_CHARS + 1)}…" (${actual.length - 2} chars)`
    : excerpt(actual)
  return `${excerpt(message.slice(0, at), 3 * EXCERPT_CHARS)}, actual ${shown}`
}

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) =>
      typeof key === "number"
        ? `${out}[${key}]`
        : out === ""
        ? excerpt(String(key), 40)
        : `${out}.${excerpt(String(key), 40)}`,
    ""
  ) || "body"

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: Schema.String
}) {
  /** `Input validation failed: <path>: <message>; ...`, with client values and the number of issues bounded. */
  static fromIssues(issues: ReadonlyArray<Issue>, prefix: ReadonlyArray<PropertyKey> = []): ValidationError {
    const listed = issues.slice(0, LISTED_ISSUES).map((issue) =>
      `${formatPath([...prefix, ...issue.path])}: ${boundedMessage(issue.message)}`
    )
    const more = issues.length > LISTED_ISSUES ? `; and ${issues.length - LISTED_ISSUES} more` : ""
    return new ValidationError({ message: `Input validation failed: ${listed.join("; ")}${more}` })
  }
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {
  static of(kind: string, id: string): NotFound {
    return new NotFound({ message: `${kind} ${excerpt(id)} not found` })
  }
}

/** Well-formed but contradicting what is stored (an Idempotency-Key reused with another body). */
export class UnprocessableEntity extends Schema.TaggedError<UnprocessableEntity>()("UnprocessableEntity", {
  message: Schema.String
}) {}

/** The request contradicts the state of what it names (an execution whose workflow changed under it). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String
}) {
  static of(limit: number): PayloadTooLarge {
    return new PayloadTooLarge({ message: `Request body exceeds ${limit} bytes` })
  }
}

/**
 * A failure a tool declared (`defineTool({ errors })`): answered with the status its class is annotated
 * with (tools/handlers), `message` its own (or its tag and fields), `errorDetail` beside it.
 */
export class DeclaredToolError extends Schema.TaggedError<DeclaredToolError>()("DeclaredToolError", {
  message: Schema.String,
  status: Schema.Number,
  errorDetail: ErrorDetail
}) {}

/** A failure of user code (a tool, a step) that the caller should see, unlike a defect. */
export class ExecutionFailed extends Schema.TaggedError<ExecutionFailed>()("ExecutionFailed", {
  message: Schema.String
}) {}

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {
  static readonly generic = new InternalError({ message: "Internal server error" })
}

/** A workflow execution that ended in error; the client gets the execution id to inspect it. */
export class WorkflowFailed extends Schema.TaggedError<WorkflowFailed>()("WorkflowFailed", {
  message: Schema.String,
  executionId: Schema.String,
  errorDetail: Schema.optional(ErrorDetail)
}) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  static readonly required = new Unauthorized({ message: "Authentication required" })
}

/** A WebSocket endpoint reached without a WebSocket handshake. */
export class UpgradeRequired extends Schema.TaggedError<UpgradeRequired>()("UpgradeRequired", {
  message: Schema.String
}) {}

/** The request may not proceed whoever makes it (e.g. a console route called from another origin). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

/** The caller already holds as much as one caller may (e.g. streams on one /rpc connection). */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String
}) {}

/** The instance cannot take work now (draining, or its store does not answer). */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String
}) {}

/** A guardrail stopped an agent call (its input, or its answer): 422 with the guardrail's message. */
export class GuardrailBlocked extends Schema.TaggedError<GuardrailBlocked>()("GuardrailBlocked", {
  message: Schema.String,
  guardrail: Schema.String,
  stage: Schema.Literal("input", "output")
}) {}
