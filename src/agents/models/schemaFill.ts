import type { JSONValue } from "@ai-sdk/provider"
import { instanceSizer, resolveLocalRef } from "../../json-schema/instanceSize.js"

/**
 * How the built-in model fills a JSON Schema with a deterministic value, within a bounded size.
 *
 * A generous value is tried first (optional properties, one array item where none is required). When it
 * would pass `MAX_FILL_SIZE`, the smallest value the schema allows is built instead (required parts only,
 * the smallest alternative, `null` where allowed); when even that is too large the model gives up with an
 * error, so no schema can make it build an unbounded value.
 */

/** Sizes are counted as the instance-size bound counts them: about the characters of the JSON text. */
export const MAX_FILL_SIZE = 400_000

export type Schema = { readonly [keyword: string]: unknown }

/** How to pick leaf values: from the user's words where they give one, else fixed examples. */
export interface FillStyle {
  readonly root: unknown
  readonly nextNumber: () => number
  /** A string for the property (its schema has no known `format`, whose example is used instead). */
  readonly stringFor: (propertyName: string | undefined, schema: Schema) => string | undefined
  /** One of an enum's values, when the text names one (else the first). */
  readonly enumValue?: (values: ReadonlyArray<unknown>) => unknown
  readonly minArrayItems: number
}

interface Fill extends FillStyle {
  readonly minimal: boolean
  readonly sizeOf: (schema: unknown) => number
  remaining: number
}

class TooLarge extends Error {}

const spend = (fill: Fill, size: number): void => {
  fill.remaining -= size
  if (fill.remaining < 0) throw new TooLarge()
}

export const fillSchema = (schema: unknown, style: FillStyle): JSONValue => {
  const sizeOf = instanceSizer(style.root, MAX_FILL_SIZE + 1)
  for (const minimal of [false, true]) {
    try {
      return fillNode(schema, { ...style, minimal, sizeOf, remaining: MAX_FILL_SIZE })
    } catch (error) {
      if (!(error instanceof TooLarge)) throw error
    }
  }
  throw new Error(`The built-in model cannot fill this schema: its smallest value exceeds ${MAX_FILL_SIZE} characters`)
}

const FORMAT_EXAMPLES: Readonly<Record<string, string>> = {
  "date-time": "2024-01-01T00:00:00.000Z",
  date: "2024-01-01",
  time: "00:00:00Z",
  email: "user@example.com",
  uri: "https://example.com/",
  uuid: "00000000-0000-4000-8000-000000000000"
}

/** A string taken from the user's text is cut to this many characters. */
const MAX_TEXT_VALUE = 1000

/** Beyond this nesting depth only what the schema requires is filled, so recursive schemas terminate. */
const SHALLOW_DEPTH = 6
const MAX_DEPTH = 32

const fillNode = (schema: unknown, fill: Fill, propertyName?: string, depth = 0): JSONValue => {
  spend(fill, 1)
  if (!isSchema(schema) || depth > MAX_DEPTH) return null
  if (typeof schema.$ref === "string") {
    return fillNode(resolveLocalRef(fill.root, schema.$ref), fill, propertyName, depth + 1)
  }
  if ("const" in schema) return schema.const as JSONValue
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return (fill.enumValue?.(schema.enum) ?? schema.enum[0]) as JSONValue
  }
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    return fillNode(fill.minimal ? smallestOf(alternatives, fill) : alternatives[0], fill, propertyName, depth)
  }
  switch (typeOf(schema, fill.minimal)) {
    case "object":
      return fillObject(schema, fill, depth)
    case "array":
      return fillArray(schema, fill, propertyName, depth)
    case "string":
      return fillString(schema, fill, propertyName)
    case "number":
      return clampToBounds(fill.nextNumber(), schema)
    case "integer":
      return clampToBounds(Math.round(fill.nextNumber()), schema)
    case "boolean":
      return true
    default:
      return null
  }
}

const smallestOf = (alternatives: ReadonlyArray<unknown>, fill: Fill): unknown =>
  alternatives.reduce((best, candidate) => (fill.sizeOf(candidate) < fill.sizeOf(best) ? candidate : best))

const fillObject = (schema: Schema, fill: Fill, depth: number): JSONValue => {
  const properties = isSchema(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required.map(String) : []
  const generous = !fill.minimal && depth < SHALLOW_DEPTH
  // Only what is required is looked at past the generous depth: a wide schema costs nothing there.
  const names = new Set(generous ? Object.keys(properties) : required.filter((name) => Object.hasOwn(properties, name)))
  const minProperties = typeof schema.minProperties === "number" ? schema.minProperties : 0
  if (names.size < minProperties) {
    for (const name of Object.keys(properties)) {
      if (names.size >= minProperties) break
      names.add(name)
    }
  }
  // Keys are paid for before any value is filled, so a wide schema runs out of budget early.
  for (const name of names) spend(fill, name.length + 4)
  const entries = [...names].map((
    name
  ): [string, JSONValue] => [name, fillNode(properties[name], fill, name, depth + 1)])
  // Filler members satisfy `minProperties` where the schema allows properties it does not name.
  if (schema.additionalProperties !== false) {
    for (let index = 1; entries.length < minProperties; index++) {
      const name = `property${index}`
      if (name in properties) continue
      spend(fill, name.length + 4)
      entries.push([name, fillNode(schema.additionalProperties ?? {}, fill, name, depth + 1)])
    }
  }
  return Object.fromEntries(entries)
}

const fillArray = (schema: Schema, fill: Fill, propertyName: string | undefined, depth: number): JSONValue => {
  const minItems = typeof schema.minItems === "number" ? schema.minItems : 0
  const count = Math.max(minItems, !fill.minimal && depth < SHALLOW_DEPTH ? fill.minArrayItems : 0)
  if (count > fill.remaining) throw new TooLarge()
  return Array.from({ length: count }, () => fillNode(schema.items ?? {}, fill, propertyName, depth + 1))
}

const fillString = (schema: Schema, fill: Fill, propertyName: string | undefined): string => {
  const minLength = typeof schema.minLength === "number" ? schema.minLength : 0
  spend(fill, minLength + 2)
  // The smallest value takes nothing from the user's text; a value taken from it costs its length.
  const chosen = FORMAT_EXAMPLES[String(schema.format)] ??
    (fill.minimal ? "" : fill.stringFor(propertyName, schema)?.slice(0, MAX_TEXT_VALUE) ?? "example")
  spend(fill, chosen.length)
  const padded = chosen.padEnd(minLength, "x")
  return typeof schema.maxLength === "number" ? padded.slice(0, schema.maxLength) : padded
}

// The smallest value takes `null` where the schema allows it, and no type inferred from other keywords.
const typeOf = (schema: Schema, minimal: boolean): unknown => {
  if (Array.isArray(schema.type)) {
    if (minimal && schema.type.includes("null")) return "null"
    return schema.type.find((type) => type !== "null") ?? schema.type[0]
  }
  if (schema.type !== undefined || minimal) return schema.type
  if (schema.properties !== undefined) return "object"
  if (schema.items !== undefined) return "array"
  return undefined
}

const clampToBounds = (value: number, schema: Schema): number => {
  let result = value
  if (typeof schema.minimum === "number") result = Math.max(result, schema.minimum)
  if (typeof schema.maximum === "number") result = Math.min(result, schema.maximum)
  if (typeof schema.exclusiveMinimum === "number" && result <= schema.exclusiveMinimum) {
    result = schema.exclusiveMinimum + 1
  }
  if (typeof schema.exclusiveMaximum === "number" && result >= schema.exclusiveMaximum) {
    result = schema.exclusiveMaximum - 1
  }
  return result
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value)
