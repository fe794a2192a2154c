import { convertToModelMessages, type ModelMessage, type UIMessage } from "ai"
import type { AgentInput } from "../AgentsSchemas.js"

const isUIMessages = (input: ReadonlyArray<object>): boolean => "parts" in input[0]

/** The request's input as model messages: a string is one user message; UI messages are converted by the SDK. */
export const toModelMessages = async (input: AgentInput): Promise<Array<ModelMessage>> => {
  if (typeof input === "string") return [{ role: "user", content: input }]
  if (isUIMessages(input)) return convertToModelMessages(input as unknown as Array<UIMessage>)
  return [...(input as ReadonlyArray<ModelMessage>)]
}

/** The text a message carries, for memory (tool traffic is not kept). */
export const textOf = (message: ModelMessage): string =>
  typeof message.content === "string"
    ? message.content
    : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
