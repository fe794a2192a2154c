import { Schema } from "effect"

/** A JSON Schema document, as the API shows a tool's, agent's or workflow's input and output schemas. */
export const JsonSchemaObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "JsonSchema",
  description: "A JSON Schema object"
})
