/**
 * What an agent call was asked, as text: a history entry's input is whatever the caller sent (a string,
 * UI messages `{role, parts}` or model messages `{role, content}`), and the console's own chat sends UI
 * messages. The last user message's text parts; failing that, any text; failing that, the JSON.
 */
export const messageText = (input: unknown): string => {
  if (typeof input === "string") return input
  if (!Array.isArray(input)) return JSON.stringify(input) ?? "—"
  const texts = input.map((message: unknown) => ({ role: roleOf(message), text: textOf(message) }))
    .filter(({ text }) => text !== "")
  const fromUser = texts.filter(({ role }) => role === "user")
  const chosen = fromUser[fromUser.length - 1] ?? texts[texts.length - 1]
  return chosen?.text ?? JSON.stringify(input)
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const roleOf = (message: unknown) => (isRecord(message) && typeof message.role === "string" ? message.role : undefined)

/** A message's text parts joined: `parts` for a UI message, `content` (a string or parts) for a model message. */
const textOf = (message: unknown): string => {
  if (!isRecord(message)) return ""
  if (typeof message.content === "string") return message.content
  const parts = Array.isArray(message.parts) ? message.parts : Array.isArray(message.content) ? message.content : []
  return parts.flatMap((
    part: unknown
  ) => (isRecord(part) && part.type === "text" && typeof part.text === "string" ? [part.text] : []))
    .join(" ")
    .trim()
}
