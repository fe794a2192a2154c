import { AbstractChat, type ChatState, type ChatStatus, DefaultChatTransport, type UIMessage } from "ai"
import { Effect } from "effect"

/** The plain state a UI framework would hold (what `@ai-sdk/react`'s Chat keeps in React state). */
export class PlainState implements ChatState<UIMessage> {
  status: ChatStatus = "ready"
  error: Error | undefined = undefined
  messages: Array<UIMessage> = []
  pushMessage = (message: UIMessage) => void this.messages.push(message)
  popMessage = () => void this.messages.pop()
  replaceMessage = (index: number, message: UIMessage) => void (this.messages[index] = message)
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

export class TestChat extends AbstractChat<UIMessage> {
  constructor(id: string, api: string) {
    // The transport at its defaults: only where to post.
    super({ id, transport: new DefaultChatTransport({ api }), state: new PlainState() })
  }
}

export const textOf = (message: UIMessage | undefined) =>
  (message?.parts ?? []).flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")

/** Sends, and fails the test with the chat's own error when the request did not succeed. */
export const send = (chat: TestChat, action: () => Promise<void>) =>
  Effect.promise(async () => {
    await action()
    if (chat.status === "error") throw chat.error
  })
