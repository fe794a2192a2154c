import { Schema } from "effect"

/**
 * A failure as its class wrote it (issue #30): `_tag` (the tagged error's tag),
 * the message the `error` string also carries, and its other fields. `error` stays a plain string
 * everywhere; this travels beside it (`errorDetail`). See observability/errorDetail.ts for how the
 * fields are made safe to record.
 */
export const ErrorDetail = Schema.Struct({
  _tag: Schema.String,
  message: Schema.String,
  fields: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "The error's own fields as JSON: non-JSON values become their type name; redacted and capped at 8 KiB"
  })
}).annotations({ identifier: "ErrorDetail", description: "The failure's tag, message and fields" })
export interface ErrorDetail extends Schema.Schema.Type<typeof ErrorDetail> {}
