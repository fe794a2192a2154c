import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * `{ success: true, data }` on the wire, the bare value in handlers and in the typed client.
 * Being a transform, it drives the encoder, the OpenAPI document and the client alike.
 */
export const Success = <S extends Schema.Schema.Any>(data: S, options?: { readonly status?: number }) =>
  Schema.transform(
    Schema.Struct({ success: Schema.Literal(true), data }),
    Schema.typeSchema(data),
    {
      strict: false,
      decode: (envelope) => (envelope as unknown as { readonly data: unknown }).data,
      encode: (value) => ({ success: true as const, data: value })
    }
  ).annotations(HttpApiSchema.annotations({ status: options?.status ?? 200 })) as unknown as Schema.Schema<
    Schema.Schema.Type<S>,
    { readonly success: true; readonly data: Schema.Schema.Encoded<S> },
    Schema.Schema.Context<S>
  >

export const FailureBody = Schema.Struct({
  success: Schema.Literal(false),
  error: Schema.String
}).annotations({ identifier: "ErrorEnvelope", description: "Every failure: success false and a message." })

interface MessageError {
  readonly message: string
}

/** `{ success: false, error: message }` with the given status, for an error class carrying `message`. */
export const Failure = <A extends MessageError, I, R>(
  error: Schema.Schema<A, I, R> & { new(props: { message: string }): A },
  status: number
) =>
  Schema.transform(FailureBody, Schema.typeSchema(error), {
    strict: false,
    decode: (body) => new error({ message: body.error }),
    encode: (value) => ({ success: false as const, error: value.message })
  }).annotations(HttpApiSchema.annotations({ status })) as unknown as Schema.Schema<A, typeof FailureBody.Encoded, R>
