import { Schema } from "effect"

/** A JSON Schema as the API declares one (tool parameters, agent and workflow inputs). */
export const JsonSchemaObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "JsonSchema",
  description: "A JSON Schema object"
})
