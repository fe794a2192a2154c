import type { Issue } from "../core/errors.js"
import { patternProblem } from "./linearPatterns.js"

/**
 * What a client's JSON Schema may hold, checked before Ajv sees it: Ajv compiles a schema to code, in
 * time growing with its size (10,000 optional properties took 6 s, 40,000 with a pattern 15-20 s).
 * Within these bounds compiling takes at most about 0.2 s (docs/decisions.md, issue #27).
 */
export const SCHEMA_BOUNDS = {
  /** Characters of the schema's JSON text. */
  chars: 100_000,
  /** JSON values in the schema document (objects, arrays, strings, numbers...). */
  nodes: 2_000,
  /** Nesting of the schema document's objects and arrays. */
  depth: 32,
  /** Members of every `properties` and `patternProperties` together. */
  properties: 500,
  /** `pattern`s and `patternProperties` keys together. */
  patterns: 50
} as const

type Node = { readonly [keyword: string]: unknown }

const isNode = (value: unknown): value is Node => typeof value === "object" && value !== null && !Array.isArray(value)

/** Counts values and nesting without recursion (the document's depth is not known yet). */
const sizeIssue = (schema: unknown): Issue | undefined => {
  let nodes = 0
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value: schema, depth: 1 }]
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!
    if (++nodes > SCHEMA_BOUNDS.nodes) {
      return {
        path: [],
        message:
          `has more than ${SCHEMA_BOUNDS.nodes} schema nodes (JSON values); at most ${SCHEMA_BOUNDS.nodes} are allowed`
      }
    }
    if (typeof value !== "object" || value === null) continue
    if (depth > SCHEMA_BOUNDS.depth) {
      return {
        path: [],
        message: `is nested deeper than ${SCHEMA_BOUNDS.depth} levels; at most ${SCHEMA_BOUNDS.depth} are allowed`
      }
    }
    for (const child of Object.values(value)) stack.push({ value: child, depth: depth + 1 })
  }
  return undefined
}

// The keywords whose values Ajv compiles as schemas, in draft 2020-12 and draft-07.
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"]
const SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems", "items"]
const SCHEMAS = [
  "items",
  "additionalItems",
  "additionalProperties",
  "propertyNames",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties"
]

/** Counts properties and patterns, and checks each pattern, along the schema's own keywords. */
const contentIssues = (schema: unknown): Array<Issue> => {
  const issues: Array<Issue> = []
  let properties = 0
  let patterns = 0
  const pattern = (text: string, path: ReadonlyArray<PropertyKey>) => {
    patterns++
    const problem = patternProblem(text)
    if (problem !== undefined) issues.push({ path, message: problem })
  }
  // The document's depth is bounded already, so recursion is safe.
  const visit = (node: unknown, path: ReadonlyArray<PropertyKey>): void => {
    if (!isNode(node) || patterns > SCHEMA_BOUNDS.patterns || issues.length > 10) return
    if (typeof node.pattern === "string") pattern(node.pattern, [...path, "pattern"])
    if (isNode(node.patternProperties)) {
      for (const key of Object.keys(node.patternProperties)) pattern(key, [...path, "patternProperties"])
    }
    for (const keyword of ["properties", "patternProperties"]) {
      if (isNode(node[keyword])) properties += Object.keys(node[keyword]).length
    }
    for (const keyword of SCHEMA_MAPS) {
      const members = node[keyword]
      if (isNode(members)) {
        for (const [key, member] of Object.entries(members)) visit(member, [...path, keyword, key])
      }
    }
    for (const keyword of SCHEMA_LISTS) {
      const members = node[keyword]
      if (Array.isArray(members)) members.forEach((member, index) => visit(member, [...path, keyword, index]))
    }
    for (const keyword of SCHEMAS) visit(node[keyword], [...path, keyword])
  }
  visit(schema, [])
  if (properties > SCHEMA_BOUNDS.properties) {
    return [{
      path: ["properties"],
      message: `has ${properties} properties in all; at most ${SCHEMA_BOUNDS.properties} are allowed`
    }]
  }
  if (patterns > SCHEMA_BOUNDS.patterns) {
    return [{
      path: [],
      message:
        `has more than ${SCHEMA_BOUNDS.patterns} patterns; at most ${SCHEMA_BOUNDS.patterns} patterns are allowed`
    }]
  }
  return issues
}

/** The bounds a client's schema breaks (empty when it keeps them all), cheapest check first. */
export const schemaBoundsIssues = (schema: unknown): ReadonlyArray<Issue> => {
  const chars = JSON.stringify(schema)?.length ?? 0
  if (chars > SCHEMA_BOUNDS.chars) {
    return [{
      path: [],
      message:
        `is longer than ${SCHEMA_BOUNDS.chars} characters of JSON (${chars}); at most ${SCHEMA_BOUNDS.chars} are allowed`
    }]
  }
  const size = sizeIssue(schema)
  return size !== undefined ? [size] : contentIssues(schema)
}
