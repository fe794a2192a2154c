import { Schema } from "effect"

/** A non-negative integer query parameter (documented as an integer, read from its string form). */
export const QueryInt = Schema.compose(
  Schema.String.annotations({ jsonSchema: { type: "integer", minimum: 0 } }),
  Schema.NumberFromString.pipe(Schema.int({ message: () => "must be an integer" }), Schema.nonNegative({ message: () => "must not be negative" }))
)
