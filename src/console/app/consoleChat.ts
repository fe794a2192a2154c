import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage
} from "ai"
import { segment, send } from "./api.js"
import { authHeaders } from "./credentials.js"

/** The AI SDK's chat state, telling the view when anything changed. */
class ObservedState implements ChatState<UIMessage> {
  #status: ChatStatus = "ready"
  #error: Error | undefined = undefined
  #messages: Array<UIMessage> = []
  /** Each failed turn's error, by the id of the last message when it failed: a later turn keeps it shown. */
  readonly failures = new Map<string, Error>()
  constructor(private readonly changed: () => void) {}
  get status() {
    return this.#status
  }
  set status(status: ChatStatus) {
    this.#status = status
    this.changed()
  }
  get error() {
    return this.#error
  }
  set error(error: Error | undefined) {
    this.#error = error
    const last = this.#messages[this.#messages.length - 1]
    if (error !== undefined && last !== undefined) this.failures.set(last.id, error)
    this.changed()
  }
  get messages() {
    return this.#messages
  }
  set messages(messages: Array<UIMessage>) {
    this.#messages = messages
    this.changed()
  }
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.#messages, message]
  }
  popMessage = () => {
    this.messages = this.#messages.slice(0, -1)
  }
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.#messages.map((current, at) => (at === index ? message : current))
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

/**
 * A chat with one agent over POST /agents/:id/chat, read by the AI SDK's own client (its transport
 * parses the UI message stream and AbstractChat assembles the messages). The service keeps the
 * conversation (memory, keyed by the conversation id), so each request sends only the new message, in
 * the service's documented body: `{input, options: {conversationId}}`.
 *
 * A tool waiting for approval is answered with the SDK's `addToolApprovalResponse`; once every pending
 * approval of the last answer has one, the chat resubmits by itself (`sendAutomaticallyWhen`) in the
 * SDK's own body `{id, messages, trigger}`, whose last message carries the answers.
 */
export class ConsoleChat extends AbstractChat<UIMessage> {
  readonly failures: ReadonlyMap<string, Error>
  constructor(readonly agentId: string, readonly conversationId: string, changed: () => void) {
    const state = new ObservedState(changed)
    super({
      id: conversationId,
      state,
      transport: new DefaultChatTransport<UIMessage>({
        api: `/agents/${segment(agentId)}/chat`,
        headers: authHeaders,
        fetch: (input, init) => send(String(input), init ?? {}),
        prepareSendMessagesRequest: ({ messages, trigger, messageId }) => ({
          body: lastAssistantMessageIsCompleteWithApprovalResponses({ messages })
            ? { id: conversationId, messages, trigger, ...(messageId === undefined ? {} : { messageId }) }
            : { input: messages.slice(-1), options: { conversationId } }
        })
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses
    })
    this.failures = state.failures
  }
}
