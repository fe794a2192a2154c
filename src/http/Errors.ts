import * as Errors from "../errors.js"
import { Failure } from "./Envelope.js"

/** The wire form and status of every shared error. Endpoints and the API add these, never raw classes. */
export const ValidationError = Failure(Errors.ValidationError, 400)
export const BadRequest = Failure(Errors.BadRequest, 400)
export const NotFound = Failure(Errors.NotFound, 404)
export const PayloadTooLarge = Failure(Errors.PayloadTooLarge, 413)
export const ExecutionFailed = Failure(Errors.ExecutionFailed, 500)
export const InternalError = Failure(Errors.InternalError, 500)

const declared = [
  Errors.ValidationError,
  Errors.BadRequest,
  Errors.NotFound,
  Errors.PayloadTooLarge,
  Errors.ExecutionFailed,
  Errors.InternalError
]

/** Whether the API has a wire form for this error (anything else reaching the edge is a bug). */
export const isDeclaredError = (error: unknown): boolean => declared.some((cls) => error instanceof cls)
