import type { UIMessage } from "ai"
import { ParseResult, Schema, SchemaAST } from "effect"
import { type AgentInput, GenerateRequest, GenerationOptions, MessageRole } from "./AgentsSchemas.js"
import type { ClientConversation } from "./generation/contract.js"

/**
 * `POST /agents/:id/chat` takes the spec's `{input, options}` or the AI SDK's own chat request, as
 * `DefaultChatTransport` sends it at its defaults: `{id, messages, trigger, messageId}`.
 */

/** Bounds on what a chat client can size, below the body limit, so an oversized conversation is a clear 400. */
export const CHAT_BOUNDS = {
  messages: 1000,
  partsPerMessage: 200,
  textChars: 500_000,
  idChars: 256
} as const

const StringUpTo = (chars: number) =>
  Schema.String.pipe(Schema.maxLength(chars, { message: () => `must be at most ${chars} characters` }))

const ShortString = StringUpTo(CHAT_BOUNDS.idChars)

const Id = ShortString.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

const ChatPart = Schema.Struct({
  type: ShortString,
  text: Schema.optional(StringUpTo(CHAT_BOUNDS.textChars))
}, { key: Schema.String, value: Schema.Unknown })

export const ChatUIMessage = Schema.Struct({
  id: Schema.optional(ShortString),
  role: MessageRole("system", "user", "assistant"),
  parts: Schema.Array(ChatPart).pipe(Schema.maxItems(CHAT_BOUNDS.partsPerMessage, {
    message: () => `must have at most ${CHAT_BOUNDS.partsPerMessage} parts`
  })),
  metadata: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "ChatUIMessage" })
export type ChatUIMessage = typeof ChatUIMessage.Type

export const SdkChatRequest = Schema.Struct({
  id: Id.annotations({ description: "the chat's id: the conversation id in memory and history" }),
  messages: Schema.Array(ChatUIMessage).pipe(
    Schema.minItems(1, { message: () => "must not be empty" }),
    Schema.maxItems(CHAT_BOUNDS.messages, { message: () => `must have at most ${CHAT_BOUNDS.messages} messages` })
  ).annotations({
    description: "the whole conversation as the client holds it: the model's context (memory is not loaded)"
  }),
  trigger: Schema.Literal("submit-message", "regenerate-message").annotations({
    description: "regenerate-message replaces the conversation's last stored answer instead of adding one"
  }),
  messageId: Schema.optional(ShortString),
  options: Schema.optional(GenerationOptions)
}).annotations({
  identifier: "SdkChatRequest",
  description: "the AI SDK's chat request, as DefaultChatTransport sends it (useChat)"
})
export type SdkChatRequest = typeof SdkChatRequest.Type

const isObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const neither = "must be either {input, options} or the AI SDK's chat request {id, messages, trigger}"

/**
 * Either body, told apart by its keys (`input` or `messages`) before decoding, so a bad body is answered
 * about the shape it has rather than with the issues of both. Documented as the union of the two.
 */
type Bodies = readonly [typeof GenerateRequest, typeof SdkChatRequest]
type Direction = (schema: Schema.Schema<any, any>) => (input: unknown, options?: SchemaAST.ParseOptions) => any
const byKeys =
  (generate: Schema.Schema<any, any>, sdk: Schema.Schema<any, any>, direction: Direction) =>
  (input: unknown, options: SchemaAST.ParseOptions, ast: SchemaAST.AST) =>
    isObject(input) && "input" in input
      ? direction(generate)(input, options)
      : isObject(input) && "messages" in input
      ? direction(sdk)(input, options)
      : ParseResult.fail(new ParseResult.Type(ast, input, neither))
export const ChatPayload = Schema.declare<
  typeof GenerateRequest.Type | SdkChatRequest,
  typeof GenerateRequest.Encoded | typeof SdkChatRequest.Encoded,
  Bodies
>(
  [GenerateRequest, SdkChatRequest],
  {
    decode: (generate, sdk) => byKeys(generate, sdk, ParseResult.decodeUnknown),
    encode: (generate, sdk) => byKeys(generate, sdk, ParseResult.encodeUnknown)
  },
  // Generated values (the schema-derived fuzz) are of either body.
  { arbitrary: (generate, sdk) => (fc) => fc.oneof(generate(fc), sdk(fc)) }
).annotations({ [SchemaAST.SurrogateAnnotationId]: Schema.Union(GenerateRequest, SdkChatRequest).ast })
export type ChatPayload = typeof ChatPayload.Type

export const isSdkChatRequest = (payload: ChatPayload): payload is SdkChatRequest => "messages" in payload

/** The SDK's chat request as a call: the messages are the input (the whole context), the chat's id the conversation id. */
export const fromSdkChatRequest = (body: SdkChatRequest): {
  readonly input: AgentInput
  readonly options: typeof GenerationOptions.Type
  readonly clientConversation: ClientConversation
} => {
  const last = body.messages.at(-1)
  const lastUserMessage = [...body.messages].reverse().find((message) => message.role === "user") as
    | UIMessage
    | undefined
  return {
    input: body.messages as unknown as AgentInput,
    options: { ...body.options, conversationId: body.id },
    clientConversation: {
      lastUserMessage,
      storesUserMessage: body.trigger === "submit-message" && last?.role === "user",
      replacesLastAnswer: body.trigger === "regenerate-message"
    }
  }
}
