import {
  HttpApiBuilder,
  HttpApiError,
  type HttpApp,
  HttpServerError,
  HttpServerRequest,
  type HttpServerResponse
} from "@effect/platform"
import { Cause, Context, Effect, Option } from "effect"
import { ServiceApi } from "../Api.js"
import { BadRequest, InternalError, NotFound, PayloadTooLarge, ValidationError } from "../core/errors.js"
import { limitBody } from "../http/BodyLimit.js"
import { isDeclaredError } from "../http/Errors.js"
import { nulInUrl, RefusedJsonValue, withCheckedJsonBody } from "../http/JsonInput.js"

type Issue = typeof HttpApiError.Issue.Type
type MappedError = ValidationError | BadRequest | NotFound | PayloadTooLarge | InternalError

// Effect's messages for a mismatched struct or array print the whole expected type; say what is wrong instead.
const issueMessage = (issue: Issue): string => {
  if (issue._tag === "Type" && /^Expected (\{|Struct)/.test(issue.message)) return "must be an object"
  if (issue._tag === "Type" && issue.message.startsWith("Expected ReadonlyArray<")) return "must be an array"
  return issue.message
}

// An optional field's schema is a union with undefined; its "Expected undefined" half says nothing useful.
const fromDecodeError = (error: HttpApiError.HttpApiDecodeError) =>
  ValidationError.fromIssues(
    error.issues
      .filter((issue) => !issue.message.startsWith("Expected undefined,"))
      .map((issue) => ({ path: issue.path, message: issueMessage(issue) }))
  )

// The builder reports a response it cannot serialise as a decode error; it is the server's fault.
const isResponseEncodingFailure = (error: HttpApiError.HttpApiDecodeError) =>
  error.issues.some((issue) => issue.message === "Could not encode to JSON")

const fromDefect = (defect: unknown, limit: number): MappedError => {
  if (HttpServerError.isServerError(defect) && defect._tag === "RequestError") {
    const reason = defect.cause
    if (reason instanceof Error && reason.message === "maxBytes exceeded") return PayloadTooLarge.of(limit)
    if (reason instanceof RefusedJsonValue) return ValidationError.fromIssues([reason.issue])
    if (reason instanceof SyntaxError) return new BadRequest({ message: `Invalid JSON body: ${reason.message}` })
    if (reason instanceof Error) return new BadRequest({ message: `Unreadable request body: ${reason.message}` })
  }
  return InternalError.generic
}

const toEnvelopeError = (limit: number) => (cause: Cause.Cause<unknown>): Effect.Effect<never, unknown> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof HttpApiError.HttpApiDecodeError && !isResponseEncodingFailure(error)) {
      return Effect.fail(fromDecodeError(error))
    }
    if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
      return Effect.fail(new NotFound({ message: "Not found" }))
    }
    // Declared errors encode themselves through the API's schemas; anything else is a bug.
    if (isDeclaredError(error)) return Effect.failCause(cause)
  }
  const mapped = Option.isSome(failure) ? InternalError.generic : fromDefect(Cause.squash(cause), limit)
  return mapped === InternalError.generic
    ? Effect.zipRight(Effect.logError("Unhandled failure", cause), Effect.fail(mapped))
    : Effect.fail(mapped)
}

const WRITES = new Set(["POST", "PUT", "PATCH"])

const hasBody = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0

// Every body this API accepts is JSON; a form-encoded one would otherwise be decoded as url parameters.
const hasNonJsonBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const type = request.headers["content-type"]
  return type !== undefined && !/^application\/([\w.+-]*\+)?json\b/i.test(type) && hasBody(request)
}

/**
 * The one place where failures the API did not declare become envelopes: decode errors, unknown routes,
 * unreadable or oversized bodies and defects (logged; the client sees only "Internal server error").
 * It also rejects bodies that are not JSON or are over the limit, and JSON or URLs that fail the checks of
 * JsonInput (nesting, non-finite numbers, NUL characters).
 */
export const ErrorMappingLive = (bodyLimit: number) =>
  HttpApiBuilder.middleware(ServiceApi, (app) => {
    // Only a request with a body is wrapped: wrapping makes the request a prototype, which V8 pays for on
    // every later read of its fields (a third of GET throughput when every request was wrapped).
    const withBody = limitBody(
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.provideService(app, HttpServerRequest.HttpServerRequest, withCheckedJsonBody(request))),
      bodyLimit
    )
    // Decided from the fiber's context without an effect per check: this runs on every request.
    return Effect.withFiberRuntime<
      HttpServerResponse.HttpServerResponse,
      MappedError,
      HttpServerRequest.HttpServerRequest
    >((fiber) => {
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
      if (hasNonJsonBody(request)) {
        return Effect.fail(new BadRequest({ message: "Request body must be JSON (content-type: application/json)" }))
      }
      const nul = nulInUrl(request.url)
      if (nul !== undefined) {
        return Effect.fail(ValidationError.fromIssues([nul]))
      }
      // A POST without a body is wrapped too: its empty body is read as `{}` (JsonInput).
      return hasBody(request) || WRITES.has(request.method) ? withBody : app
    }).pipe(Effect.catchAllCause(toEnvelopeError(bodyLimit))) as HttpApp.Default<MappedError>
  })
