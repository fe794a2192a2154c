import { useState } from "preact/hooks"
import { api } from "./api.js"
import { Chat } from "./Chat.js"
import { History } from "./History.js"
import { useLoad } from "./load.js"
import { href } from "./route.js"
import type { Agent } from "./types.js"

const memoryText = (memory: unknown) => {
  if (memory === null || memory === undefined || memory === false) return "none"
  const config = (memory as { config?: { storage?: string; contextLimit?: number } }).config
  return config?.storage === undefined ? "on" : `${config.storage}, last ${config.contextLimit ?? "?"} messages`
}

/** The agents, and for the chosen one a chat and its history. */
export const Agents = ({ path }: { path: ReadonlyArray<string> }) => {
  const agents = useLoad(() => api<ReadonlyArray<Agent>>("/agents"), [])
  const [tab, setTab] = useState<"chat" | "history">("chat")
  const chosen = agents.data?.find((agent) => agent.id === path[0]) ?? agents.data?.[0]
  return (
    <div class="split">
      <section aria-labelledby="agents-heading" class="list">
        <h1 id="agents-heading">Agents</h1>
        {agents.error !== undefined && <p role="alert" class="error">{agents.error}</p>}
        <ul>
          {agents.data?.map((agent) => (
            <li key={agent.id}>
              <a
                href={href("agents", agent.id)}
                data-testid="agent-item"
                aria-current={agent.id === chosen?.id ? "true" : undefined}
                class="item"
              >
                <strong>{agent.name}</strong> <code>{agent.id}</code>
                <span class="meta">model {agent.model}</span>
                <span class="meta">tools {agent.tools.map((tool) => tool.name).join(", ") || "none"}</span>
                <span class="meta">memory {memoryText(agent.memory)}</span>
              </a>
            </li>
          ))}
        </ul>
      </section>
      {chosen !== undefined && (
        <section aria-label={`Agent ${chosen.id}`} class="detail">
          <h2>{chosen.name}</h2>
          <p class="meta">{chosen.description} · <a href={href("traces", "by", "agent", chosen.id)}>its traces</a></p>
          <div role="tablist" class="tabs">
            <button type="button" role="tab" aria-selected={tab === "chat"} onClick={() => setTab("chat")}>Chat</button>
            <button type="button" role="tab" aria-selected={tab === "history"} onClick={() => setTab("history")}>
              History
            </button>
          </div>
          {tab === "chat" ? <Chat key={chosen.id} agentId={chosen.id} /> : <History agentId={chosen.id} />}
        </section>
      )}
    </div>
  )
}
