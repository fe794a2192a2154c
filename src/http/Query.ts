import { Schema } from "effect"

/** A non-negative integer query parameter (documented as an integer, read from its string form). */
export const QueryInt = Schema.compose(
  Schema.String.annotations({ jsonSchema: { type: "integer", minimum: 0 } }),
  Schema.NumberFromString.pipe(Schema.int({ message: () => "must be an integer" }), Schema.nonNegative({ message: () => "must not be negative" }))
)

/** An ISO 8601 timestamp query parameter. */
export const Timestamp = Schema.String.pipe(
  Schema.filter((text) => !Number.isNaN(Date.parse(text)), { message: () => "must be an ISO 8601 timestamp" })
)

/** A timestamp parameter normalised for comparison with stored ISO text. */
export const toIso = (text: string | undefined) => (text === undefined ? undefined : new Date(text).toISOString())
