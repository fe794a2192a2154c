import type { UIMessage } from "ai"
import { useEffect, useRef, useState } from "preact/hooks"
import { chatFailure } from "./chatError.js"
import { ConsoleChat } from "./consoleChat.js"
import { Json } from "./Json.js"

/** One chat per agent for the page's life: switching tabs or agents keeps the conversation. */
const chats = new Map<string, ConsoleChat>()
const listeners = new Map<string, () => void>()

/** The conversation the agent's chat is in, if the page has one. */
export const chatConversation = (agentId: string): string | undefined => chats.get(agentId)?.conversationId

const newChat = (agentId: string) => {
  const chat = new ConsoleChat(agentId, crypto.randomUUID(), () => listeners.get(agentId)?.())
  chats.set(agentId, chat)
  return chat
}

type Part = UIMessage["parts"][number]

const isToolPart = (part: Part): part is Extract<Part, { toolCallId: string }> => "toolCallId" in part

const toolName = (part: Extract<Part, { toolCallId: string }>) =>
  part.type === "dynamic-tool" ? (part as { toolName: string }).toolName : part.type.slice("tool-".length)

type Answer = (id: string, approved: boolean) => void

/** A tool call's approval as the user sees it: asked, or answered either way. */
const approvalState = (part: Extract<Part, { toolCallId: string }>) =>
  part.state === "approval-requested"
    ? "waiting for approval"
    : part.approval?.approved === true
    ? "approved"
    : part.approval?.approved === false
    ? "denied"
    : undefined

const PartView = ({ part, answer }: { part: Part; answer: Answer }) => {
  if (part.type === "text" || part.type === "reasoning") {
    return <p class={part.type === "reasoning" ? "reasoning" : "text"}>{part.text}</p>
  }
  if (isToolPart(part)) {
    const approval = approvalState(part)
    return (
      <div class={`tool${approval === undefined ? "" : ` approval ${approval.split(" ")[0]}`}`} data-testid="chat-tool">
        <div>
          <span class="badge">tool</span> <strong>{toolName(part)}</strong> <span class="meta">{part.state}</span>
          {approval !== undefined && <span class="badge approval-state" data-testid="approval-state">{approval}</span>}
        </div>
        <Json label="input" value={part.input} />
        {part.state === "approval-requested" && (
          <div class="row" role="group" aria-label={`Approve ${toolName(part)}?`}>
            <button
              type="button"
              class="approve"
              data-testid="approval-approve"
              onClick={() => answer(part.approval.id, true)}
            >
              Approve
            </button>
            <button
              type="button"
              class="deny"
              data-testid="approval-deny"
              onClick={() =>
                answer(part.approval.id, false)}
            >
              Deny
            </button>
          </div>
        )}
        {part.state === "output-available" && <Json label="output" value={part.output} />}
        {part.state === "output-error" && <p class="error">{part.errorText}</p>}
      </div>
    )
  }
  return null
}

/** A failed turn: a guardrail's block names the guardrail; anything else is its message. */
const FailureView = ({ error }: { error: Error }) => {
  const failure = chatFailure(error)
  return failure.guardrail === undefined
    ? (
      <p role="alert" class="error" data-testid="chat-error">
        <span class="badge">stopped</span> {failure.message}
      </p>
    )
    : (
      <p role="alert" class="blocked" data-testid="chat-blocked">
        <span class="badge">blocked</span> {failure.message}{" "}
        <span class="meta">
          by the {failure.guardrail.stage} guardrail <code>{failure.guardrail.name}</code>
        </span>
      </p>
    )
}

/** The model that answered, from the finish chunk's metadata (`{model: {provider, modelId}}`). */
const answeredBy = (metadata: unknown): string | undefined => {
  const model =
    (metadata as { readonly model?: { readonly provider?: unknown; readonly modelId?: unknown } } | undefined)?.model
  return typeof model?.provider === "string" && typeof model.modelId === "string"
    ? `${model.provider}/${model.modelId}`
    : undefined
}

/** A chat with the agent, streamed as it arrives; tool calls and their results inline. */
export const Chat = ({ agentId }: { agentId: string }) => {
  const [, setTicks] = useState(0)
  const rendered = () => setTicks((ticks) => ticks + 1)
  const [chat, setChat] = useState(() => chats.get(agentId) ?? newChat(agentId))
  const [text, setText] = useState("")
  const log = useRef<HTMLDivElement>(null)
  useEffect(() => {
    listeners.set(agentId, rendered)
    return () => listeners.delete(agentId)
  }, [agentId])
  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight })
  })
  const busy = chat.status === "submitted" || chat.status === "streaming"
  const answer: Answer = (id, approved) => void chat.addToolApprovalResponse({ id, approved })
  const submit = (event: Event) => {
    event.preventDefault()
    const message = text.trim()
    if (message === "" || busy) return
    setText("")
    void chat.sendMessage({ text: message })
  }
  return (
    <div class="chat">
      <div class="row">
        <span class="meta">
          conversation <code>{chat.conversationId}</code>
        </span>
        <button
          type="button"
          onClick={() => {
            void chat.stop()
            setChat(newChat(agentId))
          }}
        >
          New conversation
        </button>
      </div>
      <div class="messages" ref={log} aria-live="polite" aria-label="Messages" role="log">
        {chat.messages.map((message) => [
          <div key={message.id} class={`message ${message.role}`} data-testid="chat-message" data-role={message.role}>
            <span class="who">{message.role}</span>
            {message.parts.map((part, index) => <PartView key={index} part={part} answer={answer} />)}
            {answeredBy(message.metadata) !== undefined && (
              <span class="meta" data-testid="chat-model">answered by {answeredBy(message.metadata)}</span>
            )}
          </div>,
          chat.failures.has(message.id) && (
            <FailureView key={`${message.id}-failure`} error={chat.failures.get(message.id)!} />
          )
        ])}
        {chat.status === "submitted" && <p class="meta">waiting for the agent…</p>}
        {chat.error !== undefined && chat.messages.length === 0 && <FailureView error={chat.error} />}
      </div>
      <form class="compose" onSubmit={submit}>
        <label for="chat-input" class="visually-hidden">Message</label>
        <textarea
          id="chat-input"
          data-testid="chat-input"
          rows={2}
          placeholder="Message (Enter sends, Shift+Enter for a new line)"
          value={text}
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey) submit(event)
          }}
        />
        {busy
          ? <button type="button" onClick={() => void chat.stop()}>Stop</button>
          : <button type="submit" data-testid="chat-send">Send</button>}
      </form>
    </div>
  )
}
