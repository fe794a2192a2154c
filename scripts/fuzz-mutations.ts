/**
 * Mutations of a valid-looking request body: wrong types, missing and unknown fields, huge and deeply
 * nested values, NUL, non-finite numbers, huge sizes, broken JSON and no body at all.
 * Huge and raw values are kept as `Raw` descriptions and only written out when the request is sent.
 */
import fc from "fast-check"

/** JSON text inserted as is (what JSON.stringify cannot write: 1e400, 10,000 levels, megabytes). */
export class Raw {
  constructor(readonly label: string, readonly text: () => string) {}
}

export type Body =
  | { readonly kind: "json"; readonly value: unknown }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "none" }

export interface Mutated {
  readonly mutation: string
  readonly body: Body
  /** Whatever the route and the rest of the body, the service must refuse this one with a 4xx. */
  readonly mustReject: boolean
}

type Path = ReadonlyArray<string | number>
interface Node {
  readonly path: Path
  readonly value: unknown
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Every node of a JSON value (at most `limit`), root first. */
const nodesOf = (root: unknown, limit = 300): Array<Node> => {
  const nodes: Array<Node> = []
  const queue: Array<Node> = [{ path: [], value: root }]
  while (queue.length > 0 && nodes.length < limit) {
    const node = queue.shift()!
    nodes.push(node)
    if (Array.isArray(node.value)) {
      node.value.forEach((value, index) => queue.push({ path: [...node.path, index], value }))
    } else if (isObject(node.value)) {
      for (const [key, value] of Object.entries(node.value)) queue.push({ path: [...node.path, key], value })
    }
  }
  return nodes
}

const clone = (value: unknown): unknown => (value === undefined ? {} : JSON.parse(JSON.stringify(value)))

/** A copy of `root` with the node at `path` replaced (or, with `undefined`, removed). */
const setAt = (root: unknown, path: Path, replacement: unknown): unknown => {
  if (path.length === 0) return replacement
  const copy = clone(root) as Record<string | number, unknown>
  let parent: Record<string | number, unknown> = copy
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
  const last = path[path.length - 1]!
  if (replacement === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1)
    else delete parent[last]
  } else parent[last] = replacement
  return copy
}

const getAt = (root: unknown, path: Path): unknown =>
  path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], root)

const pick = <A>(items: ReadonlyArray<A>): fc.Arbitrary<A> =>
  fc.nat({ max: items.length - 1 }).map((index) => items[index]!)

/** A node other than the root when there is one. */
const innerNode = (nodes: ReadonlyArray<Node>) => pick(nodes.length > 1 ? nodes.slice(1) : nodes)

const jsonType = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value)

const wrongType = (value: unknown, nodes: ReadonlyArray<Node>) =>
  fc.tuple(innerNode(nodes), fc.nat()).map(([node, choice]): Mutated => {
    const others = ["text", 42, -1.5, true, null, [], {}, [1, "a"], { x: 1 }].filter((other) =>
      jsonType(other) !== jsonType(node.value)
    )
    return {
      mutation: "wrong-type",
      body: { kind: "json", value: setAt(value, node.path, others[choice % others.length]) },
      mustReject: false
    }
  })

const dropField = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const fields = nodes.filter((node) => node.path.length > 0 && typeof node.path[node.path.length - 1] === "string")
  if (fields.length === 0) {
    return fc.constant<Mutated>({ mutation: "drop-field", body: { kind: "json", value: {} }, mustReject: false })
  }
  return pick(fields).map((node): Mutated => ({
    mutation: "drop-field",
    body: { kind: "json", value: setAt(value, node.path, undefined) },
    mustReject: false
  }))
}

const extraFields = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const objects = nodes.filter((node) => isObject(node.value))
  if (objects.length === 0) {
    return fc.constant<Mutated>({ mutation: "extra-fields", body: { kind: "json", value }, mustReject: false })
  }
  return fc.tuple(
    pick(objects),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 })
  )
    .map(([node, extra]): Mutated => ({
      mutation: "extra-fields",
      body: { kind: "json", value: setAt(value, node.path, { ...(node.value as object), ...extra }) },
      mustReject: false
    }))
}

const withNul = (text: string, at: number) => {
  const index = text.length === 0 ? 0 : at % (text.length + 1)
  return `${text.slice(0, index)}\u0000${text.slice(index)}`
}

/** A NUL in a string value or in a key: refused wherever it is (Postgres cannot store it). */
const nul = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const strings = nodes.filter((node) => typeof node.value === "string")
  const keyed = nodes.filter((node) => typeof node.path[node.path.length - 1] === "string")
  const inString = strings.length === 0 ?
    undefined :
    fc.tuple(pick(strings), fc.nat()).map(([node, at]) => setAt(value, node.path, withNul(node.value as string, at)))
  const inKey = keyed.length === 0 ? undefined : fc.tuple(pick(keyed), fc.nat()).map(([node, at]) => {
    const key = node.path[node.path.length - 1] as string
    const parentPath = node.path.slice(0, -1)
    const parent = { ...(getAt(value, parentPath) as Record<string, unknown>) }
    delete parent[key]
    parent[withNul(key, at)] = node.value
    return setAt(value, parentPath, parent)
  })
  const choices = [inString, inKey].filter((choice) => choice !== undefined)
  const mutated = choices.length === 0 ? fc.constant({ "\u0000": "x" }) : fc.oneof(...choices)
  return mutated.map((next): Mutated => ({ mutation: "nul", body: { kind: "json", value: next }, mustReject: true }))
}

/** A number literal JSON.parse turns into ±Infinity. */
const nonFinite = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const numbers = nodes.filter((node) => typeof node.value === "number")
  return fc.tuple(
    numbers.length > 0 ? pick(numbers) : innerNode(nodes),
    fc.constantFrom("1e400", "-1e400", "1e309", "-123e999")
  )
    .map(([node, literal]): Mutated => ({
      mutation: "non-finite",
      body: { kind: "json", value: setAt(value, node.path, new Raw(literal, () => literal)) },
      mustReject: true
    }))
}

const deepNesting = (value: unknown, nodes: ReadonlyArray<Node>) =>
  fc.tuple(innerNode(nodes), fc.integer({ min: 5_000, max: 20_000 }), fc.boolean()).map(
    ([node, depth, arrays]): Mutated => {
      const raw = arrays
        ? new Raw(`<${depth} nested arrays>`, () => "[".repeat(depth) + "]".repeat(depth))
        : new Raw(`<${depth} nested objects>`, () => "{\"a\":".repeat(depth) + "0" + "}".repeat(depth))
      return { mutation: "deep-nesting", body: { kind: "json", value: setAt(value, node.path, raw) }, mustReject: true }
    }
  )

const hugeString = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const strings = nodes.filter((node) => typeof node.value === "string")
  return fc.tuple(strings.length > 0 ? pick(strings) : innerNode(nodes), fc.integer({ min: 1_000_000, max: 5_000_000 }))
    .map(([node, size]): Mutated => ({
      mutation: "huge-string",
      body: {
        kind: "json",
        value: setAt(value, node.path, new Raw(`<${size}-char string>`, () => `"${"x".repeat(size)}"`))
      },
      mustReject: false
    }))
}

/** Fields whose value sizes work: the service must bound them, whatever the client asks for. */
export const SIZE_KEYS = [
  "limit",
  "offset",
  "page",
  "maxSteps",
  "contextLimit",
  "maxOutputTokens",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "minProperties",
  "maxProperties",
  "minContains",
  "maxContains"
]

const hugeNumber = (value: unknown, nodes: ReadonlyArray<Node>) => {
  const sized = nodes.filter((node) => SIZE_KEYS.includes(String(node.path[node.path.length - 1])))
  const objects = nodes.filter((node) => isObject(node.value))
  const target = sized.length > 0
    ? pick(sized).map((node) => node.path)
    : fc.tuple(pick(objects.length > 0 ? objects : [{ path: [], value: {} }]), fc.constantFrom(...SIZE_KEYS)).map((
      [node, key]
    ) => [...node.path, key])
  return fc.tuple(target, fc.constantFrom(1e6, 1e9, 2 ** 31, 2 ** 53, 1e21, 1e300)).map(([path, size]): Mutated => ({
    mutation: "huge-size",
    body: { kind: "json", value: isObject(value) || path.length === 0 ? setAt(value, path, size) : value },
    mustReject: false
  }))
}

const isJson = (text: string) => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

const invalidJson = (value: unknown) => {
  const text = JSON.stringify(value)
  return fc.oneof(
    fc.nat({ max: Math.max(0, text.length - 2) }).map((cut) => text.slice(0, cut + 1)),
    fc.constantFrom(
      `${text}}`,
      `{${text}`,
      text.replace("\"", "'"),
      `${text}x`,
      "{\"a\":1,}",
      "nul",
      "[",
      "\"open",
      "{\"input\": NaN}",
      "{\"input\": Infinity}",
      "\u00ef\u00bb\u00bf{}"
    )
  ).map((broken): Mutated => ({
    mutation: "invalid-json",
    body: { kind: "text", text: isJson(broken) ? `${broken}x` : broken },
    mustReject: true
  }))
}

// An empty body reads as `{}` (issue #29): refused or not as the route's schema says, like a dropped field.
const emptyBody = fc.constantFrom<Body>({ kind: "none" }, { kind: "text", text: "" }, { kind: "text", text: "  \n" })
  .map((body): Mutated => ({ mutation: "empty-body", body, mustReject: false }))

/** The body as sent: unchanged (weight 20 of 100) or with one mutation. */
export const mutate = (base: unknown): fc.Arbitrary<Mutated> => {
  const value = clone(base)
  const nodes = nodesOf(value)
  return fc.oneof(
    {
      weight: 20,
      arbitrary: fc.constant<Mutated>({ mutation: "none", body: { kind: "json", value }, mustReject: false })
    },
    { weight: 14, arbitrary: wrongType(value, nodes) },
    { weight: 10, arbitrary: dropField(value, nodes) },
    { weight: 10, arbitrary: extraFields(value, nodes) },
    { weight: 8, arbitrary: nul(value, nodes) },
    { weight: 8, arbitrary: nonFinite(value, nodes) },
    { weight: 5, arbitrary: deepNesting(value, nodes) },
    { weight: 8, arbitrary: hugeNumber(value, nodes) },
    { weight: 7, arbitrary: invalidJson(value) },
    { weight: 4, arbitrary: emptyBody },
    { weight: 2, arbitrary: hugeString(value, nodes) }
  )
}

const PLACEHOLDER = "__fuzz_raw_"

const serialize = (value: unknown, rawText: (raw: Raw) => string): string => {
  const raws: Array<Raw> = []
  const text = JSON.stringify(
    value,
    (_key, item) => (item instanceof Raw ? `${PLACEHOLDER}${raws.push(item) - 1}__` : item)
  )
  return raws.reduce((out, raw, index) => out.split(`"${PLACEHOLDER}${index}__"`).join(rawText(raw)), text)
}

/** The body's bytes, or undefined for no body. */
export const bodyText = (body: Body): string | undefined =>
  body.kind === "none" ? undefined : body.kind === "text" ? body.text : serialize(body.value, (raw) => raw.text())

/** A short description of the body, for reports. */
export const describeBody = (body: Body, max = 400): string => {
  const text = body.kind === "none"
    ? "<no body>"
    : body.kind === "text"
    ? body.text
    : serialize(body.value, (raw) => raw.label)
  const shown = JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text)
  return text.length > max ? `${shown} (${text.length} chars)` : shown
}
