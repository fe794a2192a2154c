/**
 * A lower bound on the size of any value a JSON Schema accepts, in characters of its JSON text, so a
 * client-supplied schema asking for more than can be generated is refused before any work starts.
 *
 * Only constraints that force size count (`minItems`, `minLength`, `minProperties`, `required`, `type`,
 * `const`/`enum`, through `$ref`, `allOf`, `anyOf`/`oneOf`, `items`/`prefixItems`); anything else is
 * assumed free, so the bound never overestimates. Sums saturate at `cap`; a recursive schema is unrolled
 * `MAX_REF_DEPTH` `$ref`s deep (what lies beyond counts as free), and each schema node is measured once per
 * `$ref` depth, so the work stays linear in the schema.
 */

type Schema = { readonly [keyword: string]: unknown }

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const unescapeURI = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** Resolves a local JSON pointer such as `#/$defs/Address` against the root schema. */
export const resolveLocalRef = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith("#")) return undefined
  const keys = ref.slice(1).split("/").filter(Boolean).map((key) =>
    unescapeURI(key).replace(/~1/g, "/").replace(/~0/g, "~")
  )
  return keys.reduce<unknown>(
    (node, key) => (isSchema(node) || Array.isArray(node) ? (node as Schema)[key] : undefined),
    root
  )
}

const jsonLength = (value: unknown): number => JSON.stringify(value)?.length ?? 1

const count = (value: unknown): number => (typeof value === "number" && value > 0 ? value : 0)

// Loops rather than spreads: a schema may list more members than a call can take arguments.
const smallest = (sizes: ReadonlyArray<number>): number => sizes.reduce((min, size) => Math.min(min, size), Infinity)
const largest = (sizes: ReadonlyArray<number>): number => sizes.reduce((max, size) => Math.max(max, size), 0)

/** `$ref`s are followed this many times along one path; a recursive schema is unrolled that far. */
const MAX_REF_DEPTH = 32
/** Deeper nesting of measurements is assumed free, so measuring cannot overflow the stack. */
const MAX_NESTING = 200

/** A measure of schemas within `root` (for `$ref`s), sharing what it has measured between calls. */
export const instanceSizer = (root: unknown, cap: number): (schema: unknown) => number => {
  // Keyed by schema node, then by how many `$ref`s led to it (a recursive one is smaller when cut off earlier).
  const measured = new Map<Schema, Map<number, number>>()
  const sum = (parts: ReadonlyArray<number>) => parts.reduce((total, part) => Math.min(cap, total + part), 0)
  const times = (n: number, each: number) => Math.min(cap, n * each)
  let nesting = 0

  const sizeOf = (schema: unknown, refs: number): number => {
    if (!isSchema(schema) || nesting >= MAX_NESTING) return 1
    const byDepth = measured.get(schema) ?? new Map<number, number>()
    measured.set(schema, byDepth)
    const known = byDepth.get(refs)
    if (known !== undefined) return known
    nesting++
    const size = Math.min(cap, measure(schema, refs))
    nesting--
    byDepth.set(refs, size)
    return size
  }

  const measure = (schema: Schema, refs: number): number => {
    if ("const" in schema) return jsonLength(schema.const)
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return smallest(schema.enum.map(jsonLength))
    const sub = (child: unknown) => sizeOf(child, refs)
    let size = typeSize(schema, sub)
    if (typeof schema.$ref === "string" && refs < MAX_REF_DEPTH) {
      size = Math.max(size, sizeOf(resolveLocalRef(root, schema.$ref), refs + 1))
    }
    if (Array.isArray(schema.allOf)) size = Math.max(size, largest(schema.allOf.map(sub)))
    for (const alternatives of [schema.anyOf, schema.oneOf]) {
      if (Array.isArray(alternatives) && alternatives.length > 0) size = Math.max(size, smallest(alternatives.map(sub)))
    }
    return size
  }

  type Sub = (child: unknown) => number

  // The smallest over the types the schema allows; without `type` every type is allowed.
  const typeSize = (schema: Schema, sub: Sub): number => {
    const types = Array.isArray(schema.type) ? schema.type : typeof schema.type === "string" ? [schema.type] : []
    if (types.length === 0) return 1
    return smallest(types.map((type) => sizeForType(schema, String(type), sub)))
  }

  const sizeForType = (schema: Schema, type: string, sub: Sub): number => {
    switch (type) {
      case "string":
        return sum([2, count(schema.minLength)])
      case "array":
        return arraySize(schema, sub)
      case "object":
        return objectSize(schema, sub)
      default:
        return 1
    }
  }

  const arraySize = (schema: Schema, sub: Sub): number => {
    const minItems = count(schema.minItems)
    const tuple = Array.isArray(schema.prefixItems)
      ? schema.prefixItems
      : Array.isArray(schema.items)
      ? schema.items
      : []
    const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items
    const leading = tuple.slice(0, minItems).map((item) => sub(item) + 1)
    const further = Math.max(0, minItems - tuple.length)
    return sum([2, ...leading, further === 0 ? 0 : times(further, sub(rest) + 1)])
  }

  const objectSize = (schema: Schema, sub: Sub): number => {
    const properties = isSchema(schema.properties) ? schema.properties : {}
    const required = Array.isArray(schema.required) ? schema.required.map(String) : []
    const members = required.map((name) => name.length + 4 + sub(properties[name]))
    // Each further member is at least `"":0,`.
    const further = times(Math.max(0, count(schema.minProperties) - required.length), 5)
    return sum([2, ...members, further])
  }

  return (schema) => sizeOf(schema, 0)
}

export const minimumInstanceSize = (root: unknown, cap: number): number => instanceSizer(root, cap)(root)
