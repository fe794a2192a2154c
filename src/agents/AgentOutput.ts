import { Effect, Either, JSONSchema, ParseResult, Schema } from "effect"
import type { JsonSchema, JsonSchemaInput } from "../json-schema/JsonSchemaValidator.js"

export type { JsonSchemaInput } from "../json-schema/JsonSchemaValidator.js"

/**
 * An agent's structured output described by an Effect Schema (issue #30, item 4): the JSON Schema
 * the model is asked for is made here, and the model's object is decoded with the schema. Shared by
 * `AgentRegistry.call` and a workflow's `andAgent`.
 */

/** The Schema of an agent's structured output: its Type is what the caller gets, no requirements. */
export type OutputSchema<A> = Schema.Schema<A, any, never>

/** The model's object did not decode with the output schema. */
export class AgentOutputInvalid extends Schema.TaggedError<AgentOutputInvalid>()("AgentOutputInvalid", {
  message: Schema.String
}) {}

type Json = { readonly [key: string]: unknown }

const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const DEFS = "#/$defs/"

/**
 * `node` with every `$ref` to `#/$defs/...` replaced by its definition, except a recursive one (a
 * definition referring to itself on the way down stays a `$ref`; `recursive` collects its name).
 */
const inline = (node: unknown, defs: Json, open: ReadonlyArray<string>, recursive: Set<string>): unknown => {
  if (Array.isArray(node)) return node.map((item) => inline(item, defs, open, recursive))
  if (!isJson(node)) return node
  const ref = node.$ref
  if (typeof ref === "string" && ref.startsWith(DEFS)) {
    const name = ref.slice(DEFS.length)
    if (open.includes(name) || !isJson(defs[name])) {
      recursive.add(name)
      return node
    }
    const { $ref: _ref, ...rest } = node
    return { ...rest, ...(inline(defs[name], defs, [...open, name], recursive) as Json) }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inline(value, defs, open, recursive)]))
}

const allowsNull = (schema: unknown): boolean =>
  isJson(schema) &&
  (schema.type === "null" || (Array.isArray(schema.type) && schema.type.includes("null")) ||
    [schema.anyOf, schema.oneOf].some((alternatives) => Array.isArray(alternatives) && alternatives.some(allowsNull)))

const requiredOf = (schema: Json): ReadonlySet<unknown> =>
  new Set(Array.isArray(schema.required) ? schema.required : [])

/**
 * The schema as strict structured-output modes (OpenAI's `strict: true`) take it: every property of
 * an object is required, an optional one may be `null` instead (`dropOptionalNulls` removes those
 * nulls again before decoding).
 */
const strict = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(strict)
  if (!isJson(node)) return node
  const out = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, strict(value)]))
  if (!isJson(node.properties)) return out
  const required = requiredOf(node)
  const declared = node.properties
  const properties = Object.fromEntries(
    Object.entries(out.properties as Json).map(([key, value]) => [
      key,
      required.has(key) || allowsNull(declared[key]) ? value : { anyOf: [value, { type: "null" }] }
    ])
  )
  return { ...out, properties, required: Object.keys(properties) }
}

const MAX_REF_DEPTH = 32

/** The alternative of `anyOf`/`oneOf` an object value is one of: all its keys declared, all required ones present. */
const alternativeFor = (alternatives: ReadonlyArray<unknown>, value: Json, defs: Json): Json | undefined =>
  alternatives.map((alternative) => resolve(alternative, defs, 0)).find((alternative): alternative is Json =>
    isJson(alternative) && isJson(alternative.properties) &&
    Object.keys(value).every((key) => key in (alternative.properties as Json)) &&
    [...requiredOf(alternative)].every((key) => typeof key === "string" && key in value)
  )

const resolve = (schema: unknown, defs: Json, depth: number): unknown =>
  isJson(schema) && typeof schema.$ref === "string" && schema.$ref.startsWith(DEFS) && depth < MAX_REF_DEPTH
    ? resolve(defs[schema.$ref.slice(DEFS.length)], defs, depth + 1)
    : schema

/** `value` without the `null`s a strict model put in optional properties (of `schema`, before `strict`). */
const dropOptionalNulls = (schema: unknown, value: unknown, defs: Json, depth = 0): unknown => {
  const resolved = resolve(schema, defs, depth)
  if (!isJson(resolved) || depth > MAX_REF_DEPTH) return value
  if (Array.isArray(value)) {
    return isJson(resolved.items)
      ? value.map((item) => dropOptionalNulls(resolved.items, item, defs, depth + 1))
      : value
  }
  if (!isJson(value)) return value
  const alternatives = resolved.anyOf ?? resolved.oneOf
  if (Array.isArray(alternatives)) {
    const alternative = alternativeFor(alternatives, value, defs)
    return alternative === undefined ? value : dropOptionalNulls(alternative, value, defs, depth + 1)
  }
  if (!isJson(resolved.properties)) return value
  const properties = resolved.properties
  const required = requiredOf(resolved)
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, item]) =>
        !(item === null && key in properties && !required.has(key) &&
          !allowsNull(resolve(properties[key], defs, depth)))
      )
      .map(([key, item]) => [key, key in properties ? dropOptionalNulls(properties[key], item, defs, depth + 1) : item])
  )
}

/** An output schema made ready once: the JSON Schema the model is asked for, and the decoder of its answer. */
export interface PreparedOutput<A> {
  /** What the provider is sent: local refs inlined (recursive ones kept under `$defs`), every property required. */
  readonly jsonSchema: JsonSchema
  readonly decode: (agentId: string, value: unknown) => Effect.Effect<A, AgentOutputInvalid>
}

const prepared = new WeakMap<Schema.Schema.AnyNoContext, PreparedOutput<unknown>>()

const make = <A>(schema: OutputSchema<A>): PreparedOutput<A> => {
  const { $defs, $schema: _draft, ...root } = JSONSchema.make(schema) as unknown as Json
  const defs = isJson($defs) ? $defs : {}
  const recursive = new Set<string>()
  const inlined = inline(root, defs, [], recursive) as Json
  const keptDefs = recursive.size === 0 ? {} : { $defs: strict(defs) }
  const decodeUnknown = Schema.decodeUnknownEither(schema, { errors: "all" })
  return {
    jsonSchema: { ...(strict(inlined) as Json), ...keptDefs },
    decode: (agentId, value) =>
      Either.match(decodeUnknown(dropOptionalNulls(inlined, value, defs)), {
        onLeft: (error) =>
          Effect.fail(
            new AgentOutputInvalid({
              message: `agent ${agentId} answered with an object that does not match its output schema: ${
                ParseResult.TreeFormatter.formatErrorSync(error)
              }`
            })
          ),
        onRight: Effect.succeed
      })
  }
}

/** The prepared form of an output schema (made once per schema). */
export const prepareOutput = <A>(schema: OutputSchema<A>): PreparedOutput<A> => {
  const known = prepared.get(schema)
  if (known !== undefined) return known as PreparedOutput<A>
  const made = make(schema)
  prepared.set(schema, made as PreparedOutput<unknown>)
  return made
}

/** Whether an output slot holds an Effect Schema (else a JSON Schema). */
export const isOutputSchema = (output: OutputSchema<unknown> | JsonSchemaInput): output is OutputSchema<unknown> =>
  Schema.isSchema(output)
