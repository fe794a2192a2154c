import type { JsonSchema } from "./types.js"

/**
 * Enough of JSON Schema to check a form before it is sent (type, required, properties,
 * additionalProperties: false, enum, items, bounds). The service validates again; this only spares a
 * round trip and says where the mistake is.
 */
export const validate = (schema: JsonSchema, value: unknown, path = "input"): Array<string> => {
  const errors: Array<string> = []
  const type = schema.type
  if (Array.isArray(schema.enum) && !schema.enum.some((allowed) => JSON.stringify(allowed) === JSON.stringify(value))) {
    errors.push(`${path} must be one of ${schema.enum.map((allowed) => JSON.stringify(allowed)).join(", ")}`)
  }
  if (typeof type === "string" && !hasType(type, value)) return [...errors, `${path} must be ${article(type)}`]
  if (Array.isArray(type) && !type.some((one) => typeof one === "string" && hasType(one, value))) {
    return [...errors, `${path} must be one of the types ${type.join(", ")}`]
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) {
      errors.push(`${path} must be at least ${schema.minimum}`)
    }
    if (typeof schema.maximum === "number" && value > schema.maximum) {
      errors.push(`${path} must be at most ${schema.maximum}`)
    }
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) errors.push(`${path} is too short`)
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) errors.push(`${path} is too long`)
  }
  if (Array.isArray(value) && isSchema(schema.items)) {
    value.forEach((item, index) => errors.push(...validate(schema.items as JsonSchema, item, `${path}[${index}]`)))
  }
  if (isObject(value)) {
    const properties = isSchema(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {}
    for (const name of Array.isArray(schema.required) ? schema.required : []) {
      if (!(name in value)) errors.push(`${path}.${name} is required`)
    }
    for (const [name, item] of Object.entries(value)) {
      const property = properties[name]
      if (property !== undefined) errors.push(...validate(property, item, `${path}.${name}`))
      else if (schema.additionalProperties === false) errors.push(`${path}.${name} is not allowed`)
    }
  }
  return errors
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isSchema = (value: unknown): boolean => isObject(value)

const hasType = (type: string, value: unknown) => {
  switch (type) {
    case "object":
      return isObject(value)
    case "array":
      return Array.isArray(value)
    case "string":
      return typeof value === "string"
    case "integer":
      return Number.isInteger(value)
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "boolean":
      return typeof value === "boolean"
    case "null":
      return value === null
    default:
      return true
  }
}

const article = (
  type: string
) => (type === "integer" || type === "object" || type === "array" ? `an ${type}` : `a ${type}`)

/** A property the form can show as one field; anything else makes the form a JSON editor. */
export interface Field {
  readonly name: string
  readonly kind: "string" | "number" | "integer" | "boolean" | "enum"
  readonly required: boolean
  readonly description: string | undefined
  readonly options: ReadonlyArray<string>
}

export const fieldsOf = (schema: JsonSchema): ReadonlyArray<Field> | undefined => {
  if (schema.type !== "object" || !isObject(schema.properties)) return undefined
  const required = new Set(Array.isArray(schema.required) ? schema.required : [])
  const fields: Array<Field> = []
  for (const [name, property] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
    const description = typeof property.description === "string" ? property.description : undefined
    if (Array.isArray(property.enum) && property.enum.every((option) => typeof option === "string")) {
      fields.push({
        name,
        kind: "enum",
        required: required.has(name),
        description,
        options: property.enum as Array<string>
      })
    } else if (
      property.type === "string" || property.type === "number" || property.type === "integer" ||
      property.type === "boolean"
    ) {
      fields.push({ name, kind: property.type, required: required.has(name), description, options: [] })
    } else {
      return undefined
    }
  }
  return fields
}

/** A field's text as the value it stands for; blank optional fields are left out. */
export const fieldValue = (field: Field, text: string): unknown => {
  if (field.kind === "number" || field.kind === "integer") return text.trim() === "" ? undefined : Number(text)
  if (field.kind === "boolean") return text === "true"
  return text === "" && !field.required ? undefined : text
}

/** A schema's own value to start from: its `default`, else its first `examples` entry, else undefined. */
export const exampleOf = (schema: JsonSchema): unknown =>
  schema.default !== undefined ? schema.default : Array.isArray(schema.examples) ? schema.examples[0] : undefined

/**
 * A field's starting text: the property's value in the schema's example, else the property's own
 * default or example; booleans start unchecked and a required enum at its first option otherwise.
 */
export const initialText = (field: Field, example: unknown, property: JsonSchema | undefined): string => {
  const given = isObject(example) && field.name in example
    ? example[field.name]
    : property === undefined
    ? undefined
    : exampleOf(property)
  if (field.kind === "boolean") return given === true ? "true" : "false"
  if ((field.kind === "number" || field.kind === "integer") && typeof given === "number") return String(given)
  if ((field.kind === "string" || field.kind === "enum") && typeof given === "string") return given
  return field.kind === "enum" && field.required ? field.options[0] ?? "" : ""
}

/** The schema's properties by name (none when it has no `properties` object). */
export const propertiesOf = (schema: JsonSchema): Record<string, JsonSchema> =>
  isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {}
