import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"
import { ErrorDetail } from "../core/errorDetail.js"
import * as Errors from "../core/errors.js"
import { Failure } from "./Envelope.js"

/** The wire form and status of every shared error. Endpoints and the API add these, never raw classes. */
export const ValidationError = Failure(Errors.ValidationError, 400)
export const BadRequest = Failure(Errors.BadRequest, 400)
export const NotFound = Failure(Errors.NotFound, 404)
export const UnprocessableEntity = Failure(Errors.UnprocessableEntity, 422)
export const Conflict = Failure(Errors.Conflict, 409)
export const PayloadTooLarge = Failure(Errors.PayloadTooLarge, 413)
export const ExecutionFailed = Failure(Errors.ExecutionFailed, 500)
export const InternalError = Failure(Errors.InternalError, 500)
export const Unauthorized = Failure(Errors.Unauthorized, 401)
export const UpgradeRequired = Failure(Errors.UpgradeRequired, 426)
export const Forbidden = Failure(Errors.Forbidden, 403)
export const ServiceUnavailable = Failure(Errors.ServiceUnavailable, 503)
export const TooManyRequests = Failure(Errors.TooManyRequests, 429)

/** The 429 a handler answers itself, with the envelope and `Retry-After` (which an API error's encoding cannot set). */
export const tooManyRequestsResponse = (error: Errors.TooManyRequests, retryAfterSeconds: number) =>
  HttpServerResponse.unsafeJson({ success: false, error: error.message }, {
    status: 429,
    headers: { "retry-after": String(retryAfterSeconds) }
  })

/** 500 with the envelope plus the execution's id (contract §4). */
export const WorkflowFailed = Schema.transform(
  Schema.Struct({
    success: Schema.Literal(false),
    error: Schema.String,
    executionId: Schema.String,
    errorDetail: Schema.optional(ErrorDetail)
  }),
  Schema.typeSchema(Errors.WorkflowFailed),
  {
    strict: false,
    decode: (body) =>
      new Errors.WorkflowFailed({
        message: body.error,
        executionId: body.executionId,
        ...(body.errorDetail === undefined ? {} : { errorDetail: body.errorDetail })
      }),
    encode: (error) => ({
      success: false as const,
      error: error.message,
      executionId: error.executionId,
      ...(error.errorDetail === undefined ? {} : { errorDetail: error.errorDetail })
    })
  }
).annotations(HttpApiSchema.annotations({ status: 500 }))

/** 422 with the envelope plus `errorDetail` naming the guardrail (`_tag` GuardrailBlocked). */
export const GuardrailBlocked = Schema.transform(
  Schema.Struct({ success: Schema.Literal(false), error: Schema.String, errorDetail: ErrorDetail }),
  Schema.typeSchema(Errors.GuardrailBlocked),
  {
    strict: false,
    decode: (body) => {
      const { guardrail, stage } = body.errorDetail.fields
      return new Errors.GuardrailBlocked({
        message: body.error,
        guardrail: String(guardrail),
        stage: stage === "output" ? "output" : "input"
      })
    },
    encode: (error) => ({
      success: false as const,
      error: error.message,
      errorDetail: {
        _tag: "GuardrailBlocked",
        message: error.message,
        fields: { guardrail: error.guardrail, stage: error.stage }
      }
    })
  }
).annotations({ identifier: "GuardrailBlockedEnvelope", ...HttpApiSchema.annotations({ status: 422 }) })

const declared = [
  Errors.ValidationError,
  Errors.BadRequest,
  Errors.NotFound,
  Errors.UnprocessableEntity,
  Errors.Conflict,
  Errors.PayloadTooLarge,
  Errors.ExecutionFailed,
  Errors.InternalError,
  Errors.WorkflowFailed,
  Errors.Unauthorized,
  Errors.UpgradeRequired,
  Errors.Forbidden,
  Errors.ServiceUnavailable,
  Errors.TooManyRequests,
  Errors.GuardrailBlocked
]

/** Whether the API has a wire form for this error (anything else reaching the edge is a bug). */
export const isDeclaredError = (error: unknown): boolean => declared.some((cls) => error instanceof cls)
