import { Either, ParseResult, Schema } from "effect"
import { ValidationError } from "../../core/errors.js"
import { storedForm } from "./StepCodec.js"

/**
 * Resume data as stored: decoded by the schema (400 with the paths when it does not fit), then encoded
 * by it, so the resumed step decodes it wherever it runs.
 */
export const storedResumeData = (schema: Schema.Schema.AnyNoContext | undefined, resumeData: unknown) => {
  if (schema === undefined) return Either.right(resumeData)
  const stored = Either.flatMap(
    Schema.decodeUnknownEither(schema as Schema.Schema<unknown>, { errors: "all" })(resumeData),
    (decoded) => storedForm(schema, decoded)
  )
  return Either.mapLeft(
    stored,
    (error) => ValidationError.fromIssues(ParseResult.ArrayFormatter.formatErrorSync(error), ["resumeData"])
  )
}
