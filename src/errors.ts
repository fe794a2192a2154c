import { Schema } from "effect"

/**
 * The errors every service fails with. Each carries the message the client sees; the HTTP status is
 * attached where the API declares them (src/http/Errors.ts), not here.
 */

/** The message of anything thrown or failed with: an Error's, an object's `message`, else its text. */
export const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
    ? (error as { message: string }).message
    : String(error)

export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : out === "" ? String(key) : `${out}.${String(key)}`),
    ""
  ) || "body"

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: Schema.String
}) {
  static fromIssues(issues: ReadonlyArray<Issue>, prefix: ReadonlyArray<PropertyKey> = []): ValidationError {
    const detail = issues.map((issue) => `${formatPath([...prefix, ...issue.path])}: ${issue.message}`).join("; ")
    return new ValidationError({ message: `Input validation failed: ${detail}` })
  }
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {
  static of(kind: string, id: string): NotFound {
    return new NotFound({ message: `${kind} ${id} not found` })
  }
}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String
}) {
  static of(limit: number): PayloadTooLarge {
    return new PayloadTooLarge({ message: `Request body exceeds ${limit} bytes` })
  }
}

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
  executionId: Schema.String
}) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  static readonly required = new Unauthorized({ message: "Authentication required" })
}

/** The request may not proceed whoever makes it (e.g. a console route called from another origin). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}
