import type { ModelMessage } from "ai"
import { Effect, Predicate } from "effect"
import { type ExecutionFailed, type GuardrailBlocked, ValidationError } from "../../core/errors.js"
import { jsonText } from "../../core/jsonText.js"
import type { AgentCallContext, AgentDefinition } from "../Agent.js"
import type { InputRole } from "./Guardrail.js"
import { guardText } from "./run.js"
import { parsedOr } from "./toolResults.js"

/**
 * What input guardrails read of a caller's messages: what the model will receive. Every message of any
 * role (a client sends the assistant's and the tools' too), its text, reasoning, tool calls' input and
 * tool results, and files whose type is text (`text/*`, JSON) decoded from their data. A file they
 * cannot read (an image, a URL, a provider's reference) is refused: the model would read it unchecked.
 */

type Part = { readonly type: string } & Record<string, unknown>

type Guard = (text: string) => Effect.Effect<string, GuardrailBlocked | ExecutionFailed>

// The caller's system messages are dropped before (generation/callerInput.ts).
const roleOf = (message: ModelMessage): InputRole => message.role === "system" ? "user" : message.role

/** A part the guardrails cannot read: the message's index and the part's, and what it is. */
class Unreadable {
  constructor(readonly message: number, readonly part: number, readonly what: string) {}
}

const TEXT_LIKE = /^(?:text(?:\/.*)?|application\/(?:[\w.+-]+\+)?json)(?:\s*;.*)?$/i

const utf8 = new TextDecoder()

const fromDataUrl = (url: string): string | undefined => {
  const match = /^data:([^,]*),(.*)$/is.exec(url)
  if (match === null) return undefined
  if (/;base64$/i.test(match[1]!)) return Buffer.from(match[2]!, "base64").toString("utf8")
  try {
    return decodeURIComponent(match[2]!)
  } catch {
    return undefined
  }
}

// A string with a scheme is a URL (as the SDK reads one); any other string is base64.
const URL_LIKE = /^[a-z][a-z0-9+.-]*:/i

/** The text of a file's data as the schema allows it (base64, a data URL, bytes, inline text); undefined when only a fetch would tell. */
const fileText = (data: unknown): string | undefined => {
  if (typeof data === "string") {
    return URL_LIKE.test(data)
      ? fromDataUrl(data)
      : Buffer.from(data, "base64").toString("utf8")
  }
  if (data instanceof URL) return fromDataUrl(data.href)
  if (data instanceof Uint8Array) return utf8.decode(data)
  if (data instanceof ArrayBuffer) return utf8.decode(new Uint8Array(data))
  if (!Predicate.hasProperty(data, "type")) return undefined
  if (data.type === "data" && Predicate.hasProperty(data, "data")) return fileText(data.data)
  if (data.type === "url" && Predicate.hasProperty(data, "url")) {
    return typeof data.url === "string"
      ? fromDataUrl(data.url)
      : data.url instanceof URL
      ? fromDataUrl(data.url.href)
      : undefined
  }
  if (data.type === "text" && Predicate.hasProperty(data, "text") && typeof data.text === "string") return data.text
  return undefined
}

const base64 = (text: string) => Buffer.from(text, "utf8").toString("base64")

/** A file part (of a message, or of a tool result's content): its text guarded, its data replaced when rewritten. */
const guardFile = (part: Part, dataKey: string, tagged: boolean, guard: Guard, at: (what: string) => Unreadable) =>
  Effect.gen(function*() {
    const mediaType = typeof part.mediaType === "string" ? part.mediaType : "unknown"
    const text = TEXT_LIKE.test(mediaType) ? fileText(part[dataKey]) : undefined
    if (text === undefined) {
      return yield* Effect.fail(
        at(TEXT_LIKE.test(mediaType) ? `a ${mediaType} file given by URL or reference` : `a file of type ${mediaType}`)
      )
    }
    const guarded = yield* guard(text)
    return guarded === text
      ? part
      : { ...part, [dataKey]: tagged ? { type: "data", data: base64(guarded) } : base64(guarded) }
  })

const guardToolOutput = (output: Part, guard: Guard, at: (what: string) => Unreadable) =>
  Effect.gen(function*() {
    switch (output.type) {
      case "text":
      case "error-text": {
        const value = String(output.value)
        const guarded = yield* guard(value)
        return guarded === value ? output : { ...output, value: guarded }
      }
      case "json":
      case "error-json": {
        const value = jsonText(output.value)
        const guarded = yield* guard(value)
        return guarded === value ? output : { ...output, value: parsedOr(guarded) }
      }
      case "execution-denied": {
        if (typeof output.reason !== "string") return output
        const guarded = yield* guard(output.reason)
        return guarded === output.reason ? output : { ...output, reason: guarded }
      }
      case "content": {
        const items = Array.isArray(output.value) ? output.value as Array<Part> : []
        const value = yield* Effect.forEach(items, (item) => {
          if (item.type === "text" && typeof item.text === "string") {
            const text = item.text
            return Effect.map(guard(text), (guarded) => guarded === text ? item : { ...item, text: guarded })
          }
          if (item.type === "file") return guardFile(item, "data", true, guard, at)
          if (item.type === "file-data") return guardFile(item, "data", false, guard, at)
          return Effect.fail(at(`a tool result's ${item.type} content`))
        })
        return value.every((item, index) => item === items[index]) ? output : { ...output, value }
      }
      default:
        return output
    }
  })

/** A part other than text through the guardrails (text parts are read together: see guardMessage). */
const guardPart = (
  part: Part,
  guard: Guard,
  at: (what: string) => Unreadable
): Effect.Effect<Part, GuardrailBlocked | ExecutionFailed | Unreadable> => {
  switch (part.type) {
    case "reasoning": {
      const text = String(part.text)
      return Effect.map(guard(text), (guarded) => guarded === text ? part : { ...part, text: guarded })
    }
    case "file":
    case "reasoning-file":
      return guardFile(part, "data", false, guard, at)
    case "image":
      return Effect.fail(at("an image"))
    case "tool-call": {
      const input = jsonText(part.input)
      return Effect.map(guard(input), (guarded) => guarded === input ? part : { ...part, input: parsedOr(guarded) })
    }
    case "tool-result":
      return Predicate.hasProperty(part.output, "type")
        ? Effect.map(
          guardToolOutput(part.output as Part, guard, at),
          (output) => output === part.output ? part : { ...part, output }
        )
        : Effect.succeed(part)
    default:
      return Effect.succeed(part)
  }
}

const textOfParts = (parts: ReadonlyArray<Part>) =>
  parts.flatMap((part) => (part.type === "text" ? [String(part.text)] : [])).join("")

/** The message's text: its string content, or its text parts joined (a word split across two is read whole). */
const textOfMessage = (message: ModelMessage): string =>
  typeof message.content === "string" ? message.content : textOfParts(message.content as ReadonlyArray<Part>)

/** The parts with their text replaced: one text part where the first was, the others dropped. */
const withText = <P extends { readonly type: string }>(parts: ReadonlyArray<P>, text: string): Array<P> => {
  const first = parts.findIndex((part) => part.type === "text")
  return parts.flatMap((part, index) => part.type !== "text" ? [part] : index === first ? [{ ...part, text }] : [])
}

interface GuardedMessage {
  readonly message: ModelMessage
  /** The text rewritten, as [sent, rewritten]. */
  readonly text?: readonly [string, string] | undefined
  /** Another part was rewritten (a file, a tool's traffic, reasoning). */
  readonly part: boolean
}

const guardMessage = (
  message: ModelMessage,
  index: number,
  guard: Guard
): Effect.Effect<GuardedMessage, GuardrailBlocked | ExecutionFailed | Unreadable> =>
  Effect.gen(function*() {
    if (typeof message.content === "string") {
      const guarded = message.content === "" ? "" : yield* guard(message.content)
      return guarded === message.content
        ? { message, part: false }
        : {
          message: { ...message, content: guarded } as ModelMessage,
          text: [message.content, guarded] as const,
          part: false
        }
    }
    const parts = message.content as ReadonlyArray<Part>
    const text = textOfParts(parts)
    const guardedText = text === "" ? text : yield* guard(text)
    const others = yield* Effect.forEach(parts, (part, at) =>
      part.type === "text" ? Effect.succeed(part) : guardPart(part, guard, (what) =>
        new Unreadable(index, at, what)))
    const part = others.some((one, at) =>
      one !== parts[at]
    )
    if (guardedText === text && !part) return { message, part }
    const content = guardedText === text ? others : withText(others, guardedText)
    return {
      message: { ...message, content } as unknown as ModelMessage,
      text: guardedText === text ? undefined : [text, guardedText] as const,
      part
    }
  })

export interface GuardedInput {
  readonly messages: Array<ModelMessage>
  /** Each rewritten message text, by the text the caller sent (none when no text was rewritten). */
  readonly rewrites: ReadonlyMap<string, string> | undefined
  /** A part other than text was rewritten: history records the guarded messages (they hold the only copy without it). */
  readonly partsRewritten: boolean
}

/** A text of a message of `role` through the agent's input guardrails: its rewrite, or the block as the failure. */
const guardOf = (agent: AgentDefinition, call: AgentCallContext): Effect.Effect<(role: InputRole) => Guard> =>
  Effect.map(Effect.option(Effect.currentSpan), (span) => (role) => (text) =>
    Effect.flatMap(
      guardText(agent.id, span, agent.inputGuardrails ?? [], text, (text) => ({ text, role, call })),
      (guarded) => "blocked" in guarded ? Effect.fail(guarded.blocked) : Effect.succeed(guarded.text)
    ))

/** Approval answers with their reasons through the input guardrails: the model reads a denial's reason as the tool's answer. */
export const guardReasons = <A extends { readonly reason?: string | undefined }>(
  agent: AgentDefinition,
  call: AgentCallContext,
  answers: ReadonlyArray<A>
): Effect.Effect<ReadonlyArray<A>, GuardrailBlocked | ExecutionFailed> =>
  Effect.flatMap(guardOf(agent, call), (guardFor) =>
    Effect.forEach(answers, (answer) => {
      const guard = guardFor("tool")
      const reason = answer.reason
      return reason === undefined || reason === ""
        ? Effect.succeed(answer)
        : Effect.map(guard(reason), (guarded) => guarded === reason ? answer : { ...answer, reason: guarded })
    }))

/**
 * The caller's messages through the agent's input guardrails (each one the client sent, a /chat
 * conversation's earlier ones too, of any role), rewritten or refused: GuardrailBlocked (422), or a
 * 400 naming the guardrails for a part they cannot read.
 */
export const guardInput = (
  agent: AgentDefinition,
  call: AgentCallContext,
  messages: ReadonlyArray<ModelMessage>,
  field: string
) =>
  Effect.gen(function*() {
    const guardrails = agent.inputGuardrails ?? []
    const guardFor = yield* guardOf(agent, call)
    const guarded = yield* Effect.forEach(messages, (message, index) =>
      guardMessage(message, index, guardFor(roleOf(message)))).pipe(
        Effect.catchIf((error): error is Unreadable =>
          error instanceof Unreadable, (unreadable) =>
          ValidationError.fromIssues([{
            path: [field],
            message: `message ${unreadable.message + 1}, part ${
              unreadable.part + 1
            }: ${unreadable.what} cannot be read by this agent's input guardrails (${
              guardrails.map((guardrail) => guardrail.name).join(", ")
            }): only text, and text/* and JSON files with their content in the request, are accepted`
          }]))
      )
    const texts = guarded.flatMap((one) =>
      one.text === undefined ? [] : [one.text]
    )
    return {
      messages: guarded.map((one) =>
        one.message
      ),
      rewrites: texts.length === 0 ? undefined : new Map(texts),
      partsRewritten: guarded.some((one) => one.part)
    } satisfies GuardedInput
  })

const uiText = (parts: ReadonlyArray<{ readonly type: string; readonly text?: unknown }>) =>
  parts.flatMap((part) => (part.type === "text" && typeof part.text === "string" ? [part.text] : [])).join("")

/**
 * The call's input as its history entry records it, with the guardrails' text rewrites applied to its
 * messages (a string, UI messages or model messages): a redacted text is stored nowhere.
 */
export const rewrittenInput = (input: unknown, rewrites: ReadonlyMap<string, string>): unknown => {
  if (typeof input === "string") return rewrites.get(input) ?? input
  if (!Array.isArray(input)) return input
  return input.map((message: unknown) => {
    if (Predicate.hasProperty(message, "parts") && Array.isArray(message.parts)) {
      const rewritten = rewrites.get(uiText(message.parts))
      return rewritten === undefined ? message : { ...message, parts: withText(message.parts, rewritten) }
    }
    if (Predicate.hasProperty(message, "content")) {
      const { content } = message
      const text = typeof content === "string" ? content : Array.isArray(content) ? uiText(content) : undefined
      const rewritten = text === undefined ? undefined : rewrites.get(text)
      if (rewritten === undefined) return message
      return {
        ...message,
        content: typeof content === "string" ? rewritten : withText(content as Array<{ type: string }>, rewritten)
      }
    }
    return message
  })
}

/** The last user message's text as memory keeps it from a client-held conversation, once guarded. */
export const guardedUserMessage = (messages: ReadonlyArray<ModelMessage>, stores: boolean): Array<ModelMessage> => {
  const last = [...messages].reverse().find((message) => message.role === "user")
  return stores && last !== undefined ? [{ role: "user", content: textOfMessage(last) }] : []
}

/** The history entry's input when a guardrail rewrote a part other than text: the guarded messages (a chat's: its last user message). */
export const guardedRecord = (guarded: GuardedInput, clientConversation: boolean): unknown =>
  clientConversation
    ? [...guarded.messages].reverse().filter((message) => message.role === "user").slice(0, 1)
    : guarded.messages
