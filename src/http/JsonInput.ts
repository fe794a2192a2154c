import { HttpServerError, type HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import type { Issue } from "../core/errors.js"
import { jsonValueIssue, NUL, NUL_MESSAGE } from "../core/jsonValue.js"

/**
 * Checks every request's JSON once, where it is parsed, before any schema, store or log sees it: nesting is
 * bounded (deep values overflow the stack when printed or serialised), numbers are finite (`1e400` parses
 * to Infinity, which JSON cannot carry back) and no string or key holds a NUL character (Postgres text
 * cannot store one). Path and query parameters are checked for NUL the same way.
 */

export { jsonValueIssue, MAX_JSON_DEPTH } from "../core/jsonValue.js"

/** A parsed body refused by the checks; the error mapping turns it into a 400 naming the path. */
export class RefusedJsonValue extends Error {
  constructor(readonly issue: Issue) {
    super(issue.message)
  }
}

const refused = (request: HttpServerRequest.HttpServerRequest, issue: Issue) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause: new RefusedJsonValue(issue) })

// An empty body (none sent, with or without a content type) is an empty object: a POST whose fields are
// all optional (cancel, suspend) needs none, and one that has required fields names the missing ones.
const parseChecked = (request: HttpServerRequest.HttpServerRequest, text: string) =>
  Effect.try({
    try: () => (text === "" ? {} : JSON.parse(text) as unknown),
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
          Effect.catchIf(parseChecked(target, text), (error) =>
            !(error.cause instanceof RefusedJsonValue), () =>
            Effect.void))
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
