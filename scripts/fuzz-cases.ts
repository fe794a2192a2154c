/**
 * Fuzz cases: a POST route, its path filled with ids that exist (or garbage), a body derived from the
 * route's payload schema (or a known-good example) and then mutated, and the caller's credentials.
 */
import { Arbitrary, Either, Schema } from "effect"
import fc from "fast-check"
import { type Body, mutate } from "./fuzz-mutations.js"
import type { FuzzRoute } from "./fuzz-routes.js"

export type AuthKind = "none" | "valid" | "garbage" | "wrong-secret" | "expired" | "empty-bearer" | "basic"

export interface FuzzCase {
  readonly route: FuzzRoute
  readonly path: string
  /** A path parameter is not an id the app knows (so a 404 is a fine answer). */
  readonly garbagePath: boolean
  readonly mutation: string
  readonly body: Body
  /** The request must be refused with a 4xx (a NUL in the path, or a body mutation that is never valid). */
  readonly mustReject: boolean
  readonly auth: AuthKind
  /** Sent with `transfer-encoding: chunked` instead of a content-length. */
  readonly chunked: boolean
}

/** Ids that exist in the running app, by `group.param` (e.g. `workflows.executionId`). */
export type KnownIds = Readonly<Record<string, ReadonlyArray<string>>>

/**
 * Known-good bodies for the example app's routes, so mutations also start from requests that run
 * (a tool that adds, a workflow that suspends, an MCP call). Routes without one use their schema only.
 */
const examples = (route: string, params: Readonly<Record<string, string>>): ReadonlyArray<unknown> => {
  const agentCall = [
    { input: "please add 2 and 40" },
    { input: "what is the weather in Paris", options: { conversationId: "fuzz", maxSteps: 2, temperature: 0 } },
    { input: [{ role: "user", content: "hello" }] },
    {
      input: [{ role: "user", parts: [{ type: "text", text: "hi" }] }],
      options: { experimental_output: { type: "text" } }
    },
    { input: REDOS_INPUT, options: { experimental_output: { type: "object", schema: REDOS_SCHEMA } } }
  ]
  const objectCall = [
    {
      input: "describe a city",
      schema: {
        type: "object",
        properties: { name: { type: "string" }, tags: { type: "array", items: { type: "string" }, minItems: 2 } },
        required: ["name"]
      }
    },
    // Issue #27 item 1: the built-in model puts the quoted text in `a`, a backtracking RegExp's worst case.
    { input: REDOS_INPUT, schema: REDOS_SCHEMA }
  ]
  const workflowInputs: Record<string, ReadonlyArray<unknown>> = {
    approval: [{ amount: 50 }, { amount: 500 }],
    pipeline: [{ text: " hi ", n: 21 }],
    slow: [{ ms: 5 }]
  }
  const toolInputs: Record<string, unknown> = { add: { a: 2, b: 3 }, get_weather: { location: "Paris" }, whoami: {} }
  switch (route) {
    case "agents.generateText":
    case "agents.streamText":
      return agentCall
    case "agents.chat":
      return [
        ...agentCall,
        {
          id: "fuzz-chat",
          messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
          trigger: "submit-message"
        }
      ]
    case "agents.generateObject":
    case "agents.streamObject":
      return objectCall
    case "tools.executeTool":
      return [{ input: toolInputs[params.name ?? ""] ?? {}, context: { tenant: "fuzz" } }]
    case "workflows.executeWorkflow":
    case "workflows.runWorkflow":
    case "workflows.streamWorkflow":
      return (workflowInputs[params.id ?? ""] ?? []).map((input) => ({ input, options: { userId: "fuzz" } }))
    case "workflows.resumeExecution":
      return [{ resumeData: { approved: true } }, { resumeData: { approved: false }, options: { stepId: "check" } }]
    case "workflows.suspendExecution":
    case "workflows.cancelExecution":
      return [{ reason: "fuzz" }]
    case "mcp.mcpPost":
      return [
        { jsonrpc: "2.0", id: 1, method: "tools/list" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } },
        {
          jsonrpc: "2.0",
          id: 3,
          method: "tools/call",
          params: { name: "agent_assistant", arguments: { input: "hi" } }
        },
        {
          jsonrpc: "2.0",
          id: 4,
          method: "initialize",
          params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "fuzz", version: "1" } }
        },
        { jsonrpc: "2.0", method: "notifications/initialized" }
      ]
    case "ops.installUpdates":
      return [{}, { packageName: "not-a-dependency" }]
    case "ops.setupObservability":
      return [{ publicKey: "pk-fuzz", secretKey: "sk-fuzz" }]
    default:
      return []
  }
}

/** `^(a+)+$` over 40 `a`s and a `!` blocked the event loop for 106 s with JavaScript's RegExp (issue #27 item 1). */
const REDOS_INPUT = `a is "${"a".repeat(40)}!"`
const REDOS_SCHEMA = { type: "object", properties: { a: { type: "string", pattern: "^(a+)+$" } }, required: ["a"] }

/**
 * Schemas that cost the service if it compiled or ran them as they are (issue #27 items 1 and 5):
 * backtracking patterns, patterns RE2 refuses, and the 10,000 and 40,000 properties.
 */
const hostileSchema: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.constantFrom("^(a+)+$", "^(a|aa)+$", "(x+x+)+y", "^(a)\\1$", "(?=a)a", "(?<!b)a", "[ab]{999}c").map((pattern) => ({
    type: "object",
    properties: { a: { type: "string", pattern } },
    patternProperties: { [pattern]: { type: "string" } }
  })),
  fc.constantFrom(10_000, 40_000).map((n) => ({
    type: "object",
    properties: Object.fromEntries(
      Array.from(
        { length: n },
        (_, i) => [`p${i}`, n > 10_000 ? { type: "string", pattern: "^a+$" } : { type: "string" }]
      )
    )
  }))
)

/** A small size most of the time; the huge-size mutation supplies the absurd ones. */
const size = fc.nat({ max: 4 })

/** JSON Schema objects of the kind clients send for structured output: an object of typed fields. */
const jsonSchema: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ node: Record<string, unknown> }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({
      type: fc.constant("string"),
      minLength: size,
      maxLength: fc.integer({ min: 4, max: 20 }),
      enum: fc.array(fc.string(), { minLength: 1, maxLength: 3 })
    }, { requiredKeys: ["type"] }),
    fc.record({
      type: fc.constantFrom("number", "integer"),
      minimum: fc.integer({ min: -10, max: 0 }),
      maximum: fc.integer({ min: 1, max: 100 })
    }, { requiredKeys: ["type"] }),
    fc.constantFrom({ type: "boolean" }, { type: "null" }, {}, { type: ["string", "null"] }),
    fc.record({
      type: fc.constant("array"),
      items: tie("node"),
      minItems: size,
      maxItems: fc.integer({ min: 4, max: 8 })
    }, { requiredKeys: ["type", "items"] }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), tie("node"), { maxKeys: 3 }).chain((properties) =>
      fc.subarray(Object.keys(properties)).map((required) => ({
        type: "object",
        properties,
        required,
        minProperties: 0
      }))
    )
  )
})).node.map((
  node
) => (node.type === "object" ? node : { type: "object", properties: { value: node }, required: ["value"] }))

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Gives each JSON Schema field present in the body a real schema (3 times in 4). */
const withJsonSchemas = (route: FuzzRoute, body: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  route.jsonSchemaPaths.length === 0 ? body : fc.tuple(
    body,
    fc.array(
      fc.option(fc.oneof({ weight: 9, arbitrary: jsonSchema }, { weight: 1, arbitrary: hostileSchema }), {
        freq: 4,
        nil: undefined
      }),
      { minLength: route.jsonSchemaPaths.length, maxLength: route.jsonSchemaPaths.length }
    )
  ).map(([value, schemas]) => {
    const copy = JSON.parse(JSON.stringify(value ?? {})) as unknown
    route.jsonSchemaPaths.forEach((path, index) => {
      const parent = path.slice(0, -1).reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), copy)
      const schema = schemas[index]
      if (isObject(parent) && path[path.length - 1]! in parent && schema !== undefined) {
        parent[path[path.length - 1]!] = schema
      }
    })
    return copy
  })

/** Values of the payload's type, written as the client would send them (encoded). */
const fromSchema = (route: FuzzRoute): fc.Arbitrary<unknown> => {
  if (route.payload === undefined) return fc.jsonValue({ maxDepth: 3 })
  const encode = Schema.encodeUnknownEither(route.payload)
  return Arbitrary.make(route.payload).map((value) => Either.getOrElse(encode(value), () => value))
}

const GARBAGE_IDS = [
  "a\u0000b",
  "\u0000",
  "..",
  "%",
  "x".repeat(300),
  "ü",
  "😀",
  "<script>",
  "'; DROP TABLE executions;--",
  " ",
  "null"
]

const pathParam = (known: ReadonlyArray<string>) => {
  const garbage = fc.oneof(
    fc.string({ minLength: 1, maxLength: 30 }),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }),
    fc.constantFrom(...GARBAGE_IDS)
  ).map((id) => ({ id, known: false }))
  return known.length === 0 ? garbage : fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...known).map((id) => ({ id, known: true })) },
    { weight: 1, arbitrary: garbage }
  )
}

const authKind = (jwt: boolean): fc.Arbitrary<AuthKind> =>
  jwt
    ? fc.oneof(
      { weight: 5, arbitrary: fc.constant("valid" as const) },
      { weight: 2, arbitrary: fc.constant("none" as const) },
      { weight: 3, arbitrary: fc.constantFrom<AuthKind>("garbage", "wrong-secret", "expired", "empty-bearer", "basic") }
    )
    : fc.constant("none")

const encodeSegment = (id: string) => {
  try {
    return encodeURIComponent(id)
  } catch {
    return "%EF%BF%BD" // a lone surrogate: send U+FFFD
  }
}

/** One request to one of the routes. */
export const fuzzCase = (routes: ReadonlyArray<FuzzRoute>, known: KnownIds, jwt: boolean): fc.Arbitrary<FuzzCase> =>
  fc.constantFrom(...routes).chain((route) =>
    fc.tuple(...route.pathParams.map((param) => pathParam(known[`${route.group}.${param}`] ?? []))).chain((ids) => {
      const params = Object.fromEntries(route.pathParams.map((param, index) => [param, ids[index]!.id]))
      const good = examples(route.name, params)
      const base = withJsonSchemas(
        route,
        good.length === 0
          ? fromSchema(route)
          : fc.oneof({ weight: 3, arbitrary: fromSchema(route) }, { weight: 2, arbitrary: fc.constantFrom(...good) })
      )
      return fc.tuple(base.chain(mutate), authKind(jwt), fc.nat({ max: 4 })).map(([mutated, auth, one]): FuzzCase => {
        const nulInPath = ids.some(({ id }) => id.includes("\u0000"))
        return {
          route,
          path: route.path.replace(/:(\w+)/g, (_, param: string) => encodeSegment(params[param]!)),
          garbagePath: ids.some(({ known }) => !known),
          mutation: nulInPath ? `${mutated.mutation}+nul-in-path` : mutated.mutation,
          body: mutated.body,
          mustReject: mutated.mustReject || nulInPath,
          auth,
          chunked: one === 0
        }
      })
    })
  )
