import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import addFormatsModule from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Either, type JSONSchema } from "effect"
import { messageOf } from "../core/errorMessages.js"
import type { Issue } from "../core/errors.js"
import { linearRegExp, PatternWorkExceeded, withPatternWork } from "./linearPatterns.js"
import { schemaBoundsIssues } from "./schemaBounds.js"

/**
 * Validates values against client- or author-supplied JSON Schemas with Ajv; compiled validators are cached.
 * Every schema's patterns run on RE2 (linearPatterns.ts), an operator's as a client's: one mechanism.
 */

export type JsonSchema = Record<string, unknown>

/** What a JSON-Schema slot of the public API takes: a plain JSON Schema object or the value of Effect's `JSONSchema.make`. */
export type JsonSchemaInput = JsonSchema | JSONSchema.JsonSchema7Root

const addFormats = addFormatsModule as unknown as (ajv: Ajv | Ajv2020) => void
const options = { allErrors: true, strict: false, validateFormats: true, code: { regExp: linearRegExp } } as const

// Each engine is built when a schema first needs it (building one compiles its meta-schemas: start-up
// time that a process validating only one draft, or none, would pay for nothing).
const lazily = <A>(make: () => A): () => A => {
  let value: A | undefined
  return () => (value ??= make())
}
const draft2020 = lazily(() => {
  const ajv = new Ajv2020(options)
  addFormats(ajv)
  return ajv
})
const draft07 = lazily(() => {
  const ajv = new Ajv(options)
  addFormats(ajv)
  return ajv
})

const engineFor = (schema: JsonSchema): Ajv | Ajv2020 =>
  typeof schema.$schema === "string" && /draft-0[4-7]/.test(schema.$schema) ? draft07() : draft2020()

const CACHE_LIMIT = 500
const cache = new Map<string, ValidateFunction>()

const compile = (schema: JsonSchema): ValidateFunction => {
  const key = JSON.stringify(schema)
  const hit = cache.get(key)
  if (hit !== undefined) {
    cache.delete(key)
    cache.set(key, hit)
    return hit
  }
  const validate = engineFor(schema).compile(schema)
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!)
  cache.set(key, validate)
  return validate
}

const toIssue = (error: ErrorObject): Issue => {
  const path: Array<PropertyKey> = error.instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment))
  if (error.keyword === "required") {
    return { path: [...path, String(error.params.missingProperty)], message: "is missing" }
  }
  if (error.keyword === "additionalProperties") {
    return { path: [...path, String(error.params.additionalProperty)], message: "is not allowed" }
  }
  return { path, message: error.message ?? "is invalid" }
}

/** Whether `schema` is itself a valid JSON Schema; the issues say why not. */
export const checkSchema = (schema: unknown): Either.Either<JsonSchema, ReadonlyArray<Issue>> => {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    return Either.left([{ path: [], message: "must be a JSON Schema object" }])
  }
  const engine = engineFor(schema as JsonSchema)
  if (!engine.validateSchema(schema)) {
    return Either.left((engine.errors ?? []).map(toIssue))
  }
  try {
    compile(schema as JsonSchema)
  } catch (error) {
    return Either.left([{ path: [], message: messageOf(error) }])
  }
  return Either.right(schema as JsonSchema)
}

/** `checkSchema` after the bounds on what a client's schema may hold (schemaBounds.ts), checked first. */
export const checkClientSchema = (schema: unknown): Either.Either<JsonSchema, ReadonlyArray<Issue>> => {
  const issues = schemaBoundsIssues(schema)
  return issues.length > 0 ? Either.left(issues) : checkSchema(schema)
}

export const validate = (schema: JsonSchema, value: unknown): Either.Either<unknown, ReadonlyArray<Issue>> => {
  const validator = compile(schema)
  try {
    return withPatternWork(() => validator(value))
      ? Either.right(value)
      : Either.left((validator.errors ?? []).map(toIssue))
  } catch (error) {
    if (error instanceof PatternWorkExceeded) return Either.left([{ path: [], message: error.message }])
    throw error
  }
}
