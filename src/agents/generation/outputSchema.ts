import { Output } from "ai"
import { Effect, Either } from "effect"
import { ValidationError } from "../../core/errors.js"
import { minimumInstanceSize } from "../../json-schema/instanceSize.js"
import * as JsonSchemaValidator from "../../json-schema/JsonSchemaValidator.js"
import type { JsonSchema } from "../../json-schema/JsonSchemaValidator.js"
import type { GenerationOptions } from "../AgentsSchemas.js"
import { validatedJsonSchema } from "./aiTools.js"

/** The largest value, in characters of JSON, that a client's output schema may require a model to produce. */
export const MAX_REQUIRED_OUTPUT = 100_000

const tooLarge =
  `requires values of more than ${MAX_REQUIRED_OUTPUT} characters of JSON (through minItems, minLength, ` +
  `minProperties or required parts), more than a model is asked to generate; at most ${MAX_REQUIRED_OUTPUT} is allowed`

/**
 * A client-supplied output schema: within the bounds of schemaBounds.ts, a valid JSON Schema whose root is
 * an object, whose values a model can produce.
 */
export const checkOutputSchema = (schema: unknown, path: string): Effect.Effect<JsonSchema, ValidationError> =>
  Either.match(JsonSchemaValidator.checkClientSchema(schema), {
    onLeft: (issues) => Effect.fail(ValidationError.fromIssues(issues, [path])),
    onRight: (valid) =>
      valid.type !== "object"
        ? Effect.fail(
          ValidationError.fromIssues([{ path: ["type"], message: "the root must be \"type\": \"object\"" }], [path])
        )
        : minimumInstanceSize(valid, MAX_REQUIRED_OUTPUT + 1) > MAX_REQUIRED_OUTPUT
        ? Effect.fail(ValidationError.fromIssues([{ path: [], message: tooLarge }], [path]))
        : Effect.succeed(valid)
  })

/** The SDK output a call's `options.experimental_output` asks for (its schema checked as above). */
export const outputFor = (options: GenerationOptions | undefined) =>
  Effect.gen(function*() {
    const requested = options?.experimental_output
    if (requested === undefined) return undefined
    if (requested.type === "text") return Output.text()
    const schema = yield* checkOutputSchema(requested.schema, "options.experimental_output.schema")
    return Output.object({ schema: validatedJsonSchema(schema) })
  })
