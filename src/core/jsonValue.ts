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
  if (typeof value === "number") return Number.isFinite(value) ? undefined : "must be a finite number (JSON has no Infinity or NaN)"
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
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value)
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index]!
      stack.push({ value: child, key, parent: node, depth: node.depth + 1 })
    }
  }
  return undefined
}

