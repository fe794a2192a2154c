import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"

/**
 * A deterministic, OpenAI-compatible Chat Completions server for tests and benchmarks.
 * Answers are derived from the request alone (see `decideAnswer`), so runs are reproducible.
 * As a process: `node .build/scripts/fake-openai.js --port 4010 [--slow-words 50]`.
 */

export interface TextPart {
  readonly type: "text"
  readonly text: string
}

export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export interface ChatMessage {
  readonly role: "system" | "user" | "assistant" | "tool"
  readonly content?: string | ReadonlyArray<TextPart | { readonly type: string }> | null
  readonly tool_calls?: ReadonlyArray<ToolCall>
  readonly tool_call_id?: string
}

export interface ToolDefinition {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description?: string; readonly parameters?: JsonSchema }
}

export type ResponseFormat =
  | {
    readonly type: "json_schema"
    readonly json_schema: { readonly name?: string; readonly schema: JsonSchema; readonly strict?: boolean }
  }
  | { readonly type: "json_object" }
  | { readonly type: "text" }

export interface ChatRequestRecord {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools?: ReadonlyArray<ToolDefinition>
  readonly tool_choice?: unknown
  readonly response_format?: ResponseFormat
  readonly stream?: boolean
  readonly stream_options?: { readonly include_usage?: boolean }
  readonly max_tokens?: number
  readonly temperature?: number
  readonly [key: string]: unknown
}

export interface FakeOpenAI {
  readonly url: string
  readonly requests: ReadonlyArray<ChatRequestRecord>
  readonly closedEarly: () => number
  readonly reset: () => void
  readonly close: () => Promise<void>
}

export interface FakeOpenAIOptions {
  readonly port?: number
  readonly host?: string
  readonly wordDelayMs?: number
  /** Words of a slow answer at least (50 by default); a word every 200 ms. */
  readonly slowMinWords?: number
  /** Keep every request for `requests` (the default); off for a process no one can ask, so long loads do not grow it. */
  readonly recordRequests?: boolean
  /**
   * Refuse, as OpenAI's strict structured outputs do (400), a `strict: true` response_format whose schema
   * has an object that does not require every property or allows additional ones. Off by default.
   */
  readonly strictSchemas?: boolean
}

export type JsonSchema = { readonly [key: string]: unknown }

type Answer =
  | { readonly kind: "text"; readonly text: string; readonly wordDelayMs?: number }
  | { readonly kind: "tool"; readonly name: string; readonly args: Record<string, unknown> }

interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
}

// ---------------------------------------------------------------------------
// Deciding the answer

const SLOW_WORD_DELAY_MS = 200
const SLOW_MIN_WORDS = 50

const countWords = (text: string): number => text.split(/\s+/).filter((word) => word.length > 0).length

const contentText = (content: ChatMessage["content"]): string =>
  typeof content === "string"
    ? content
    : (content ?? []).flatMap((part) => ("text" in part && typeof part.text === "string" ? [part.text] : [])).join(" ")

const lastUserText = (messages: ReadonlyArray<ChatMessage>): string =>
  contentText([...messages].reverse().find((message) => message.role === "user")?.content)

const weatherLocation = (text: string): string => {
  const word = /\bin\s+(\S+)/i.exec(text)?.[1]?.replace(/[^\p{L}\p{N}-]/gu, "")
  return word || "Paris"
}

const padToMinWords = (text: string, minWords: number): string => {
  let padded = text
  while (countWords(padded) < minWords) padded += " and so on"
  return padded
}

const decideAnswer = (request: ChatRequestRecord, slowMinWords: number): Answer => {
  const last = request.messages.at(-1)
  if (last?.role === "tool") return { kind: "text", text: `The tool said: ${contentText(last.content)}` }

  const userText = lastUserText(request.messages)
  const toolNames = new Set((request.tools ?? []).map((tool) => tool.function.name))
  const addition = /add\s+(-?\d+(?:\.\d+)?)\s+and\s+(-?\d+(?:\.\d+)?)/i.exec(userText)

  const delegation = /delegate\s+"([^"]+)"\s+to\s+([\w-]+)/i.exec(userText)
  if (delegation !== null && toolNames.has("delegate_task")) {
    return { kind: "tool", name: "delegate_task", args: { task: delegation[1], targetAgents: [delegation[2]] } }
  }
  const remember = /remember (?:that my name is (.+?)[.!]?$|(an invalid name))/is.exec(userText)
  const memoryTool = request.tools?.find((tool) => tool.function.name === "update_working_memory")
  if (remember !== null && memoryTool !== undefined) {
    // The whole record, filled to the tool's schema, with the name given (a number when asked for an invalid one).
    const schema = asSchema(memoryTool.function.parameters)
    return {
      kind: "tool",
      name: "update_working_memory",
      args: { ...fillObject(schema, schema, 0), name: remember[1] ?? 42 }
    }
  }
  if (/weather/i.test(userText) && toolNames.has("get_weather")) {
    return { kind: "tool", name: "get_weather", args: { location: weatherLocation(userText) } }
  }
  const refund = /refund\s+(\d+(?:\.\d+)?)/i.exec(userText)
  if (refund !== null && toolNames.has("refund")) {
    return { kind: "tool", name: "refund", args: { amount: Number(refund[1]) } }
  }
  if (addition !== null && toolNames.has("add")) {
    return { kind: "tool", name: "add", args: { a: Number(addition[1]), b: Number(addition[2]) } }
  }
  if (request.response_format?.type === "json_schema") {
    const schema = request.response_format.json_schema.schema
    return { kind: "text", text: JSON.stringify(fillSchema(schema, schema)) }
  }
  if (request.response_format?.type === "json_object") return { kind: "text", text: "{}" }
  if (/\bslowly\b/i.test(userText)) {
    return { kind: "text", text: padToMinWords(`You said: ${userText}`, slowMinWords), wordDelayMs: SLOW_WORD_DELAY_MS }
  }
  return { kind: "text", text: `You said: ${userText}` }
}

// ---------------------------------------------------------------------------
// Filling a JSON Schema with a deterministic valid value

// Past this depth, recursive schemas only get what they require, so filling terminates.
const MAX_FILL_DEPTH = 8

const asSchema = (value: unknown): JsonSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonSchema) : {}

const resolveRef = (ref: string, root: JsonSchema): JsonSchema => {
  const path = /^#\/(?:definitions|\$defs)\/(.+)$/.exec(ref)?.[1]
  if (path === undefined) return {}
  const definitions = asSchema(root[ref.startsWith("#/$defs/") ? "$defs" : "definitions"])
  return asSchema(definitions[decodeURIComponent(path).replace(/~1/g, "/").replace(/~0/g, "~")])
}

const schemaType = (schema: JsonSchema): string | undefined => {
  const type = schema.type
  if (typeof type === "string") return type
  if (Array.isArray(type)) return type.find((entry) => entry !== "null") ?? type[0]
  if (schema.properties !== undefined) return "object"
  if (schema.items !== undefined) return "array"
  return undefined
}

const fillNumber = (schema: JsonSchema, integer: boolean): number => {
  const minimum = typeof schema.minimum === "number" ? schema.minimum : -Infinity
  const maximum = typeof schema.maximum === "number" ? schema.maximum : Infinity
  return integer
    ? Math.min(Math.max(42, Math.ceil(minimum)), Math.floor(maximum))
    : Math.min(Math.max(42, minimum), maximum)
}

const fillString = (schema: JsonSchema): string => {
  if (schema.format === "date-time") return "2024-01-01T00:00:00.000Z"
  if (schema.format === "email") return "user@example.com"
  const minLength = typeof schema.minLength === "number" ? schema.minLength : 0
  return "example".padEnd(minLength, "e")
}

const fillObject = (schema: JsonSchema, root: JsonSchema, depth: number): Record<string, unknown> => {
  const properties = asSchema(schema.properties)
  const required = new Set(Array.isArray(schema.required) ? schema.required : [])
  const names = depth > MAX_FILL_DEPTH
    ? Object.keys(properties).filter((name) => required.has(name))
    : Object.keys(properties)
  return Object.fromEntries(names.map((name) => [name, fillSchema(asSchema(properties[name]), root, depth + 1)]))
}

const fillArray = (schema: JsonSchema, root: JsonSchema, depth: number): Array<unknown> => {
  const minItems = typeof schema.minItems === "number" ? schema.minItems : 0
  const count = depth > MAX_FILL_DEPTH ? minItems : Math.max(1, minItems)
  return Array.from({ length: count }, () => fillSchema(asSchema(schema.items), root, depth + 1))
}

const fillSchema = (schema: JsonSchema, root: JsonSchema, depth = 0): unknown => {
  if (typeof schema.$ref === "string") return fillSchema(resolveRef(schema.$ref, root), root, depth + 1)
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives) && alternatives.length > 0) {
    return fillSchema(asSchema(alternatives[0]), root, depth + 1)
  }

  switch (schemaType(schema)) {
    case "object":
      return fillObject(schema, root, depth)
    case "array":
      return fillArray(schema, root, depth)
    case "string":
      return fillString(schema)
    case "number":
      return fillNumber(schema, false)
    case "integer":
      return fillNumber(schema, true)
    case "boolean":
      return true
    default:
      return null
  }
}

// ---------------------------------------------------------------------------
// Strict structured outputs

/** Why OpenAI's strict mode refuses `schema` (the first object it finds wrong), if it does. */
export const strictSchemaIssue = (schema: unknown, path: ReadonlyArray<string> = []): string | undefined => {
  if (Array.isArray(schema)) {
    for (const [index, item] of schema.entries()) {
      const issue = strictSchemaIssue(item, [...path, String(index)])
      if (issue !== undefined) return issue
    }
    return undefined
  }
  if (typeof schema !== "object" || schema === null) return undefined
  const node = schema as JsonSchema
  const where = `context=(${path.map((key) => `'${key}'`).join(", ")})`
  if (node.properties !== undefined || node.type === "object") {
    if (node.additionalProperties !== false) {
      return `In ${where}, 'additionalProperties' is required to be supplied and to be false.`
    }
    const required = new Set(Array.isArray(node.required) ? node.required : [])
    const missing = Object.keys(asSchema(node.properties)).filter((key) => !required.has(key))
    if (missing.length > 0) {
      return `In ${where}, 'required' is required to be supplied and to be an array including every key in properties. ` +
        `Missing '${missing[0]}'.`
    }
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === "const" || key === "enum" || key === "default" || key === "examples") continue
    const issue = strictSchemaIssue(value, [...path, key])
    if (issue !== undefined) return issue
  }
  return undefined
}

// ---------------------------------------------------------------------------
// Wire format

const usageOf = (request: ChatRequestRecord, answer: Answer): Usage => {
  const prompt_tokens = request.messages.reduce(
    (sum, message) =>
      sum +
      countWords(contentText(message.content)) +
      (message.tool_calls ?? []).reduce((calls, call) => calls + countWords(call.function.arguments), 0),
    0
  )
  const completion_tokens = answer.kind === "text" ? countWords(answer.text) : 1
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }
}

const finishReasonOf = (answer: Answer) => (answer.kind === "tool" ? "tool_calls" : "stop")

const toolCallOf = (answer: Extract<Answer, { kind: "tool" }>, id: string): ToolCall => ({
  id,
  type: "function",
  function: { name: answer.name, arguments: JSON.stringify(answer.args) }
})

// Splits before each word that follows whitespace, so the pieces concatenate back to `text` exactly.
const wordDeltas = (text: string): Array<string> => text.split(/(?<=\s)(?=\S)/).filter((piece) => piece.length > 0)

const sendJson = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}

const parseChatRequest = (body: string): ChatRequestRecord | string => {
  try {
    const parsed: unknown = JSON.parse(body)
    const messages = (parsed as { messages?: unknown } | null)?.messages
    return Array.isArray(messages) ? (parsed as ChatRequestRecord) : "messages must be an array"
  } catch (error) {
    return `malformed JSON: ${(error as Error).message}`
  }
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

// ---------------------------------------------------------------------------
// Failures on cue, by model name (for model fallback tests)

/**
 * What a model name asks the fake to do instead of answering:
 * - `fail-<status>`: answer that status (a 429 with `Retry-After: 60`, or `-ra<seconds>` for another value);
 * - `stall`: send nothing (no status, no byte) until the client goes away;
 * - `break-after-first` (streamed): send the first word, then drop the connection;
 * - `reset`: send the response's head, then drop the connection before any of its body;
 * and with `-<n>x` (`fail-500-2x`, `stall-1x`), only for the first n requests naming that model.
 */
export type Cue =
  | { readonly kind: "fail"; readonly status: number; readonly retryAfter?: string; readonly times?: number }
  | { readonly kind: "stall"; readonly times?: number }
  | { readonly kind: "break-after-first"; readonly times?: number }
  | { readonly kind: "reset"; readonly times?: number }

export const cueOf = (model: string): Cue | undefined => {
  const times = /-(\d+)x(?:-|$)/.exec(model)?.[1]
  const counted = times === undefined ? {} : { times: Number(times) }
  const fail = /^fail-(\d{3})(?:-|$)/.exec(model)
  if (fail !== null) {
    const status = Number(fail[1])
    const retryAfter = /-ra(\d+)(?:-|$)/.exec(model)?.[1] ?? (status === 429 ? "60" : undefined)
    return { kind: "fail", status, ...(retryAfter === undefined ? {} : { retryAfter }), ...counted }
  }
  if (/^stall(?:-|$)/.test(model)) return { kind: "stall", ...counted }
  if (/^break-after-first(?:-|$)/.test(model)) return { kind: "break-after-first", ...counted }
  if (/^reset(?:-|$)/.test(model)) return { kind: "reset", ...counted }
  return undefined
}

// ---------------------------------------------------------------------------
// Server

export const startFakeOpenAI = async (options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> => {
  const requests: Array<ChatRequestRecord> = []
  let closedEarly = 0
  let completionCounter = 0
  let toolCallCounter = 0
  const defaultWordDelayMs = options.wordDelayMs ?? 0
  const cueCounts = new Map<string, number>()

  /** The cue of the request's model, if it still applies (a counted one for its first n requests). */
  const activeCue = (model: string): Cue | undefined => {
    const cue = cueOf(model)
    if (cue === undefined) return undefined
    const seen = (cueCounts.get(model) ?? 0) + 1
    cueCounts.set(model, seen)
    return cue.times === undefined || seen <= cue.times ? cue : undefined
  }

  const respond = (res: ServerResponse, request: ChatRequestRecord): void => {
    const cue = typeof request.model === "string" ? activeCue(request.model) : undefined
    if (cue?.kind === "stall") {
      // Never answered: any close of it is the client's (or the server's end).
      res.on("close", () => closedEarly++)
      return
    }
    if (cue?.kind === "reset") {
      res.writeHead(200, { "content-type": request.stream === true ? "text/event-stream" : "application/json" })
      res.flushHeaders()
      setTimeout(() => res.destroy(), 20)
      return
    }
    if (cue?.kind === "fail") {
      res.writeHead(cue.status, {
        "content-type": "application/json",
        ...(cue.retryAfter === undefined ? {} : { "retry-after": cue.retryAfter })
      })
      res.end(
        JSON.stringify({
          error: { message: `failing on cue (${request.model})`, type: "fake_failure", code: String(cue.status) }
        })
      )
      return
    }
    const format = request.response_format
    if (options.strictSchemas === true && format?.type === "json_schema" && format.json_schema.strict === true) {
      const issue = strictSchemaIssue(format.json_schema.schema)
      if (issue !== undefined) {
        const name = format.json_schema.name ?? "response"
        sendJson(res, 400, {
          error: {
            message: `Invalid schema for response_format '${name}': ${issue}`,
            type: "invalid_request_error",
            param: "response_format",
            code: null
          }
        })
        return
      }
    }
    const answer = decideAnswer(request, options.slowMinWords ?? SLOW_MIN_WORDS)
    const header = {
      id: `chatcmpl-${++completionCounter}`,
      created: Math.floor(Date.now() / 1000),
      model: request.model
    }
    const toolCall = answer.kind === "tool" ? toolCallOf(answer, `call_${++toolCallCounter}`) : undefined
    if (request.stream === true) {
      void streamAnswer(res, request, answer, header, toolCall, cue?.kind === "break-after-first")
      return
    }
    sendJson(res, 200, {
      ...header,
      object: "chat.completion",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: answer.kind === "text" ? answer.text : null,
          ...(toolCall ? { tool_calls: [toolCall] } : {})
        },
        finish_reason: finishReasonOf(answer)
      }],
      usage: usageOf(request, answer)
    })
  }

  const streamAnswer = async (
    res: ServerResponse,
    request: ChatRequestRecord,
    answer: Answer,
    header: { id: string; created: number; model: string },
    toolCall: ToolCall | undefined,
    breakAfterFirst = false
  ): Promise<void> => {
    let finished = false
    let disconnected = false
    res.on("close", () => {
      if (finished) return
      disconnected = true
      closedEarly++
    })
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
    res.flushHeaders()
    const send = (data: string) => res.write(`data: ${data}\n\n`)
    const sendChunk = (fields: object) =>
      send(JSON.stringify({ ...header, object: "chat.completion.chunk", ...fields }))

    sendChunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })
    if (answer.kind === "text") {
      const delayMs = answer.wordDelayMs ?? defaultWordDelayMs
      for (const [index, word] of wordDeltas(answer.text).entries()) {
        if (index > 0 && delayMs > 0) await sleep(delayMs)
        if (disconnected) return
        sendChunk({ choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })
        if (breakAfterFirst) {
          await sleep(20)
          res.destroy()
          return
        }
      }
    }
    if (toolCall) {
      sendChunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...toolCall }] }, finish_reason: null }] })
    }
    sendChunk({ choices: [{ index: 0, delta: {}, finish_reason: finishReasonOf(answer) }] })
    if (request.stream_options?.include_usage === true) sendChunk({ choices: [], usage: usageOf(request, answer) })
    send("[DONE]")
    finished = true
    res.end()
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname
    if (req.method === "GET" && path === "/v1/models") {
      return sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model" }] })
    }
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      return sendJson(res, 404, { error: { message: "not found" } })
    }
    const request = parseChatRequest(await readBody(req))
    if (typeof request === "string") return sendJson(res, 400, { error: { message: request } })
    if (options.recordRequests !== false) requests.push(request)
    respond(res, request)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } })
      else res.destroy()
    })
  })
  await new Promise<void>((listening, failed) => {
    server.once("error", failed)
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => listening())
  })
  const { address, port } = server.address() as AddressInfo
  const host = address.includes(":") ? `[${address}]` : address

  return {
    url: `http://${host}:${port}`,
    requests,
    closedEarly: () => closedEarly,
    reset: () => {
      requests.length = 0
      closedEarly = 0
      cueCounts.clear()
    },
    close: () =>
      new Promise<void>((closed, failed) => {
        server.close((error) => (error ? failed(error) : closed()))
        server.closeAllConnections()
      })
  }
}

const numberArgument = (argv: ReadonlyArray<string>, name: string, fallback: number): number => {
  const index = argv.indexOf(name)
  return index >= 0 ? Number(argv[index + 1]) : fallback
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const fake = await startFakeOpenAI({
    port: numberArgument(process.argv, "--port", 4010),
    slowMinWords: numberArgument(process.argv, "--slow-words", SLOW_MIN_WORDS),
    recordRequests: false
  })
  console.log(`fake-openai listening on ${fake.url}`)
}
