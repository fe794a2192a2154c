import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { ValidationError } from "../src/core/errors.js"
import { checkSchema, validate } from "../src/json-schema/JsonSchemaValidator.js"

describe("JSON Schema validation (Ajv)", () => {
  const person = {
    type: "object",
    properties: { name: { type: "string" }, tags: { type: "array", items: { type: "string" } } },
    required: ["name"],
    additionalProperties: false
  }

  it("accepts valid values and reports every issue with its path", () => {
    expect(validate(person, { name: "Ada", tags: ["x"] })).toEqual(Either.right({ name: "Ada", tags: ["x"] }))
    const result = validate(person, { tags: ["x", 3], extra: true })
    expect(Either.isLeft(result)).toBe(true)
    const message = ValidationError.fromIssues(Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : [])), [
      "input"
    ]).message
    expect(message).toBe(
      "Input validation failed: input.name: is missing; input.extra: is not allowed; input.tags[1]: must be string"
    )
  })

  it("understands draft 2020-12 by default and draft-07 when declared", () => {
    const tuple = { type: "array", prefixItems: [{ type: "number" }], items: false }
    expect(Either.isRight(validate(tuple, [1]))).toBe(true)
    expect(Either.isLeft(validate(tuple, [1, 2]))).toBe(true)
    const draft07 = { $schema: "http://json-schema.org/draft-07/schema#", type: "string", format: "email" }
    expect(Either.isRight(validate(draft07, "a@b.example"))).toBe(true)
    expect(Either.isLeft(validate(draft07, "nope"))).toBe(true)
  })

  it("rejects what is not a JSON Schema", () => {
    expect(Either.isLeft(checkSchema("string"))).toBe(true)
    expect(Either.isLeft(checkSchema([]))).toBe(true)
    expect(Either.isLeft(checkSchema({ type: "strnig" }))).toBe(true)
    expect(Either.isRight(checkSchema(person))).toBe(true)
  })

  it("runs patterns on RE2: ECMAScript escapes work, each test is charged to the validation's work", () => {
    const unicode = { type: "string", pattern: "^\\u0041\\u{1F600}$" }
    expect(Either.isRight(validate(unicode, "A😀"))).toBe(true)
    expect(Either.isLeft(validate(unicode, "B😀"))).toBe(true)
    // Distinct patterns in one schema stay distinct (Ajv keys compiled patterns by their text).
    const two = {
      type: "object",
      properties: { a: { type: "string", pattern: "^a$" }, b: { type: "string", pattern: "^b$" } }
    }
    expect(Either.isRight(validate(two, { a: "a", b: "b" }))).toBe(true)
    expect(Either.isLeft(validate(two, { a: "b", b: "a" }))).toBe(true)
    // A 1,000-instruction program over 30,000 characters is more than one validation may spend.
    const costly = { type: "string", pattern: "[ab]{900}c" }
    const result = validate(costly, "ab".repeat(15_000))
    expect(Either.isLeft(result) && result.left[0]!.message).toMatch(/would exceed the 5000000 units of work/)
    expect(Either.isLeft(validate(costly, "ab".repeat(50)))).toBe(true)
  })
})
