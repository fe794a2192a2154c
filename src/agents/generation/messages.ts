import { InvalidPromptError } from "@ai-sdk/provider"
import { convertToModelMessages, type ModelMessage, modelMessageSchema, type UIMessage } from "ai"
import { messageOf } from "../../core/errors.js"
import type { AgentInput } from "../AgentsSchemas.js"
import type { CallRequest, ClientConversation } from "./contract.js"

const isUIMessages = (input: ReadonlyArray<object>): boolean => "parts" in input[0]

const modelMessages = modelMessageSchema.array()

/**
 * Messages the SDK would refuse once streaming had begun (an error event after a 200) are refused here,
 * before the call, as the SDK itself would word it (a few microseconds a message).
 */
const checked = (messages: Array<ModelMessage>): Array<ModelMessage> => {
  const result = modelMessages.safeParse(messages)
  if (result.success) return messages
  const issue = result.error.issues.at(0)
  const where = issue === undefined ? "" : ` (at ${issue.path.join(".")}: ${issue.message})`
  throw new InvalidPromptError({
    prompt: messages,
    message: `the messages do not match the ModelMessage[] schema${where}`
  })
}

/**
 * UI messages as the SDK converts them. What it cannot convert is the caller's mistake: `ai` 7 throws
 * a bare TypeError for a file part without a valid `url`, where `ai` 6 left it for `checked` to refuse.
 */
const converted = (messages: Array<UIMessage>): Promise<Array<ModelMessage>> =>
  convertToModelMessages(messages).catch((error: unknown) => {
    throw InvalidPromptError.isInstance(error)
      ? error
      : new InvalidPromptError({
        prompt: messages,
        message: `the messages do not match the UIMessage[] schema (${messageOf(error)})`
      })
  })

/** The request's input as model messages: a string is one user message; UI messages are converted by the SDK. */
export const toModelMessages = async (input: AgentInput): Promise<Array<ModelMessage>> => {
  if (typeof input === "string") return [{ role: "user", content: input }]
  if (isUIMessages(input)) return checked(await converted(input as unknown as Array<UIMessage>))
  return checked([...(input as ReadonlyArray<ModelMessage>)])
}

/** The text a message carries, for memory (tool traffic is not kept). */
export const textOf = (message: ModelMessage): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")

const uiText = (message: UIMessage): string =>
  message.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")

/** What memory keeps of a client-held conversation's request: its last user message, when new. */
export const userMessageToRemember = (client: ClientConversation): Array<ModelMessage> =>
  client.storesUserMessage && client.lastUserMessage !== undefined
    ? [{ role: "user", content: uiText(client.lastUserMessage) }]
    : []

/** The call's input as its history entry records it: for a client-held conversation, only the last user message. */
export const recordedInput = (request: CallRequest): unknown =>
  request.clientConversation === undefined
    ? request.input
    : request.clientConversation.lastUserMessage === undefined
    ? []
    : [request.clientConversation.lastUserMessage]

/**
 * The UI message stream's message id: the call's (its history entry's) id, or, when the client's last
 * message is an assistant message being continued, that message's id (the SDK's own rule).
 */
export const messageIds = (request: CallRequest, callId: string) => ({
  originalMessages: request.clientConversation === undefined ? [] : request.input as unknown as Array<UIMessage>,
  generateMessageId: () => callId
})
