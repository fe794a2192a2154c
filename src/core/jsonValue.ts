import type { Issue } from "./errors.js"

/**
 * What JSON can carry, checked on a parsed or produced value: nesting is bounded (deep values overflow
 * the stack when printed or serialised), numbers are finite (`1e400` parses to Infinity, and a sum can
 * overflow to it, which JSON cannot carry: it would become `null`) and no string or key holds a NUL
 * character (Postgres text cannot store one). Request bodies (http/JsonInput) and tool results use it.
 */

/** Arrays and objects may nest this many levels, counting the body itself. */
export const MAX_JSON_DEPTH = 64

export const NUL = "\u0000"
export const NUL_MESSAGE = "must not contain NUL characters (\\u0000)"

interface Node {
  readonly value: unknown
  readonly key: PropertyKey | undefined
  readonly parent: Node | undefined
  readonly depth: number
}

const pathOf = (node: Node): Array<PropertyKey> => {
  const path: Array<PropertyKey> = []
  for (let at: Node | undefined = node; at?.key !== undefined; at = at.parent) path.push(at.key)
  return path.reverse()
}

// Iterative, so a value nested far beyond the limit cannot overflow the stack while being checked.
const problemAt = (node: Node): string | undefined => {
  const { value } = node
  if (typeof value === "number") {
    return Number.isFinite(value)
      ? undefined
      : "must be a finite number (JSON has no Infinity or NaN)"
  }
  if (typeof value === "string") return value.includes(NUL) ? NUL_MESSAGE : undefined
  if (typeof value !== "object" || value === null) return undefined
  if (node.depth > MAX_JSON_DEPTH) return `is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for JSON values)`
  if (!Array.isArray(value) && Object.keys(value).some((key) => key.includes(NUL))) return `keys ${NUL_MESSAGE}`
  return undefined
}

/** The first problem in a parsed JSON value, in document order, with its path. */
export const jsonValueIssue = (root: unknown): Issue | undefined => {
  const stack: Array<Node> = [{ value: root, key: undefined, parent: undefined, depth: 1 }]
  while (stack.length > 0) {
    const node = stack.pop()!
    const message = problemAt(node)
    if (message !== undefined) return { path: pathOf(node), message }
    const { value } = node
    if (typeof value !== "object" || value === null) continue
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((item, index) => [index, item])
      : Object.entries(value)
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index]!
      stack.push({ value: child, key, parent: node, depth: node.depth + 1 })
    }
  }
  return undefined
}

/** A value JSON does not carry as it is: where, what it is (`a bigint`), and what JSON would do with it. */
export interface NonJsonValue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly what: string
  readonly why: string
}

// Objects JSON writes as `{}` whatever they hold: refused even where class instances may pass.
const EMPTIED: ReadonlySet<unknown> = new Set([Map, Set, WeakMap, WeakSet, Promise])

const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

const instanceName = (value: object): string => {
  const make: unknown = value.constructor
  const name = typeof make === "function" && make.name !== "" ? make.name : "object"
  // Built-ins (Date, Map, Uint8Array, ...) by their name; a class of the app's own as an instance of it.
  const builtin = typeof make === "function" && (globalThis as Record<string, unknown>)[name] === make
  return builtin ? `a ${name}` : `an instance of ${name}`
}

const whatOf = (value: unknown, strict: boolean): Pick<NonJsonValue, "what" | "why"> | undefined => {
  switch (typeof value) {
    case "bigint":
      return { what: "a bigint", why: "JSON has no BigInt" }
    case "function":
      return { what: "a function", why: "JSON drops it" }
    case "symbol":
      return { what: "a symbol", why: "JSON drops it" }
    case "number":
      return strict && !Number.isFinite(value)
        ? { what: `a non-finite number (${value})`, why: "JSON writes it as null" }
        : undefined
    case "object": {
      if (value === null || Array.isArray(value) || isPlainObject(value)) return undefined
      if (EMPTIED.has(value.constructor)) return { what: instanceName(value), why: "JSON writes it as {}" }
      return strict ? { what: instanceName(value), why: "it is read back as a plain object or a string" } : undefined
    }
    default:
      return undefined
  }
}

/**
 * The first value in `root` (depth first) that JSON does not carry as it is: a bigint, a function, a
 * symbol, a cycle, a Map or Set (written as `{}`). `strict` (a step's output, which a later step may
 * read back from the store) also refuses non-finite numbers and every object that is not a plain
 * object or array (a Date, a class instance): JSON would hand back something else. Nesting is
 * followed to MAX_JSON_DEPTH (jsonValueIssue reports deeper values).
 */
export const nonJsonValue = (root: unknown, options: { readonly strict: boolean }): NonJsonValue | undefined => {
  const ancestors = new Set<object>()
  const path: Array<PropertyKey> = []
  const visit = (value: unknown, depth: number): NonJsonValue | undefined => {
    const found = whatOf(value, options.strict)
    if (found !== undefined) return { path: [...path], ...found }
    if (typeof value !== "object" || value === null || depth > MAX_JSON_DEPTH) return undefined
    if (ancestors.has(value)) {
      return { path: [...path], what: "a cycle", why: "JSON cannot write a value that contains itself" }
    }
    // An instance JSON writes through its toJSON (a Date where it may pass) is not looked into.
    if (typeof (value as { readonly toJSON?: unknown }).toJSON === "function") return undefined
    ancestors.add(value)
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((item, index) => [index, item])
      : Object.entries(value)
    for (const [key, child] of entries) {
      path.push(key)
      const issue = visit(child, depth + 1)
      path.pop()
      if (issue !== undefined) return issue
    }
    ancestors.delete(value)
    return undefined
  }
  return visit(root, 1)
}

/** A path as code reads it: `.total`, `.lines[2].amount`; empty for the value itself. */
export const codePath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) =>
    typeof key === "number"
      ? `[${key}]`
      : /^[A-Za-z_$][\w$]*$/.test(String(key))
      ? `.${String(key)}`
      : `[${JSON.stringify(String(key))}]`
  ).join("")
