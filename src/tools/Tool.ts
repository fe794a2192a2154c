import { Effect, Either, JSONSchema, ParseResult, Schema } from "effect"
import { checkDefinitionId } from "../core/definitionId.js"
import type { Issue } from "../core/errors.js"
import * as JsonSchemaValidator from "../json-schema/JsonSchemaValidator.js"
import type { JsonSchema } from "../json-schema/JsonSchemaValidator.js"
import { fromUserResult, type UserResult } from "../core/userCode.js"

/** What a tool sees of its caller. */
export interface ToolContext {
  /** The caller's `context` object (empty when none was sent). */
  readonly context: Readonly<Record<string, unknown>>
  /** The authenticated user, or null. */
  readonly user: unknown
  /** Aborted when the caller goes away or the call is interrupted. */
  readonly signal: AbortSignal
}

export type ToolExecute<A> = (input: A, context: ToolContext) => UserResult<unknown>

export interface Tool {
  readonly name: string
  readonly description: string
  readonly tags: ReadonlyArray<string>
  /** The input as JSON Schema, for clients, models and the OpenAPI document. */
  readonly parameters: JsonSchema
  readonly decode: (input: unknown) => Either.Either<unknown, ReadonlyArray<Issue>>
  /** Runs the tool on decoded input; any failure, thrown or returned, is the error channel. */
  readonly run: (input: unknown, context: ToolContext) => Effect.Effect<unknown, unknown>
}

interface ToolOptions<P> {
  readonly name: string
  readonly description: string
  readonly tags?: ReadonlyArray<string>
  readonly parameters: P
}

const make = (
  options: ToolOptions<unknown>,
  parameters: JsonSchema,
  decode: Tool["decode"],
  execute: ToolExecute<any>
): Tool => {
  checkDefinitionId("Tool name", options.name)
  return {
    name: options.name,
    description: options.description,
    tags: options.tags ?? [],
    parameters,
    decode,
    run: (input, context) => Effect.suspend(() => fromUserResult(execute(input, context)))
  }
}

const fromEffectSchema = <A, I>(schema: Schema.Schema<A, I>): Pick<Tool, "parameters" | "decode"> => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all" })
  return {
    parameters: JSONSchema.make(schema) as unknown as JsonSchema,
    decode: (input) => Either.mapLeft(decode(input), ParseResult.ArrayFormatter.formatErrorSync)
  }
}

/**
 * A tool whose parameters are an Effect Schema (decoded input is typed) or a JSON Schema object
 * (validated with Ajv, input is `unknown`).
 */
export function defineTool<A, I>(
  options: ToolOptions<Schema.Schema<A, I>> & { readonly execute: ToolExecute<A> }
): Tool
export function defineTool(options: ToolOptions<JsonSchema> & { readonly execute: ToolExecute<unknown> }): Tool
export function defineTool(
  options: ToolOptions<Schema.Schema<any, any> | JsonSchema> & { readonly execute: ToolExecute<any> }
): Tool {
  if (Schema.isSchema(options.parameters)) {
    const { decode, parameters } = fromEffectSchema(options.parameters)
    return make(options, parameters, decode, options.execute)
  }
  const schema = Either.getOrThrowWith(
    JsonSchemaValidator.checkSchema(options.parameters),
    (issues) => new Error(`Tool "${options.name}" parameters: ${issues.map((i) => i.message).join("; ")}`)
  )
  return make(options, schema, (input) => JsonSchemaValidator.validate(schema, input), options.execute)
}
