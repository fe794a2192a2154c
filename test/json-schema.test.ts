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
})
