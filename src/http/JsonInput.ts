import { HttpServerError, type HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import type { Issue } from "../core/errors.js"

/**
 * Checks every request's JSON once, where it is parsed, before any schema, store or log sees it: nesting is
 * bounded (deep values overflow the stack when printed or serialised), numbers are finite (`1e400` parses
 * to Infinity, which JSON cannot carry back) and no string or key holds a NUL character (Postgres text
 * cannot store one). Path and query parameters are checked for NUL the same way.
 */

/** Arrays and objects may nest this many levels, counting the body itself. */
export const MAX_JSON_DEPTH = 64

const NUL = "\u0000"
const NUL_MESSAGE = "must not contain NUL characters (\\u0000)"

/** A parsed body refused by the checks; the error mapping turns it into a 400 naming the path. */
export class RefusedJsonValue extends Error {
  constructor(readonly issue: Issue) {
    super(issue.message)
  }
}

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
  if (typeof value === "number") return Number.isFinite(value) ? undefined : "must be a finite number (the literal is out of range)"
  if (typeof value === "string") return value.includes(NUL) ? NUL_MESSAGE : undefined
  if (typeof value !== "object" || value === null) return undefined
  if (node.depth > MAX_JSON_DEPTH) return `is nested deeper than ${MAX_JSON_DEPTH} levels (the limit for request bodies)`
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

const refused = (request: HttpServerRequest.HttpServerRequest, issue: Issue) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause: new RefusedJsonValue(issue) })

const parseChecked = (request: HttpServerRequest.HttpServerRequest, text: string) =>
  Effect.try({
    try: () => (text === "" ? null : JSON.parse(text) as unknown),
    catch: (cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
  }).pipe(Effect.flatMap((value) => {
    const issue = jsonValueIssue(value)
    return issue === undefined ? Effect.succeed(value) : Effect.fail(refused(request, issue))
  }))

/**
 * The request with its body checked when read: `json` as parsed and checked; `text` (read by routes that
 * parse for themselves, such as MCP) refused when it is JSON that fails the checks, else passed through.
 */
export const withCheckedJsonBody = (request: HttpServerRequest.HttpServerRequest) =>
  // A proxy, not `Object.create(request)`: making each request a prototype sends V8's request objects to
  // slow mode, which cost a quarter of the throughput of every POST route.
  new Proxy(request, {
    get: (target, key) => {
      if (key === "json") return Effect.flatMap(target.text, (text) => parseChecked(target, text))
      if (key === "text") {
        return Effect.tap(target.text, (text) =>
          Effect.catchIf(parseChecked(target, text), (error) => !(error.cause instanceof RefusedJsonValue), () => Effect.void))
      }
      return Reflect.get(target, key, target)
    }
  })

/** A NUL character in the URL's path or query (`%00`), with where it is. */
export const nulInUrl = (url: string): Issue | undefined => {
  if (!/%00/i.test(url)) return undefined
  const query = url.indexOf("?")
  if (/%00/i.test(query === -1 ? url : url.slice(0, query))) return { path: ["path"], message: NUL_MESSAGE }
  for (const [name, value] of new URLSearchParams(url.slice(query + 1))) {
    if (name.includes(NUL)) return { path: ["query"], message: `parameter names ${NUL_MESSAGE}` }
    if (value.includes(NUL)) return { path: [name], message: NUL_MESSAGE }
  }
  return undefined
}
