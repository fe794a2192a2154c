import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"

/**
 * The response for data fixed at start-up, encoded once through the endpoint's success schema (the
 * envelope included) as the API builder would encode it per request. Responses are immutable values, so
 * the one built here is served as is.
 */
export const fixedJsonResponse = <A, I>(success: Schema.Schema<A, I>, value: A) =>
  Effect.flatMap(
    Effect.orDie(Schema.encode(success)(value)),
    (encoded) => Effect.orDie(HttpServerResponse.json(encoded, { status: HttpApiSchema.getStatusSuccess(success) }))
  )
