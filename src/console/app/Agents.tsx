import { useState } from "preact/hooks"
import { api, segment } from "./api.js"
import { Chat } from "./Chat.js"
import { History } from "./History.js"
import { useLoad } from "./load.js"
import { href } from "./route.js"
import type { Agent, AgentDetails } from "./types.js"
import { WorkingMemory } from "./WorkingMemory.js"

const memoryText = (memory: unknown) => {
  if (memory === null || memory === undefined || memory === false) return "none"
  const config = (memory as { config?: { storage?: string; contextLimit?: number } }).config
  return config?.storage === undefined ? "on" : `${config.storage}, last ${config.contextLimit ?? "?"} messages`
}

const toolNames = (agent: Agent) =>
  agent.tools.map((tool) => (tool.needsApproval ? `${tool.name} (needs approval)` : tool.name)).join(", ") || "none"

/** What the agent's details add to its summary: its guardrails, and which tools wait for a human. */
const Safeguards = ({ agent, details }: { agent: Agent; details: AgentDetails | undefined }) => {
  const approvals = agent.tools.filter((tool) => tool.needsApproval).map((tool) => tool.name)
  const guardrails = details?.guardrails
  return (
    <dl class="safeguards" data-testid="agent-safeguards">
      <dt>Input guardrails</dt>
      <dd data-testid="guardrails-input">{guardrails === undefined ? "…" : guardrails.input.join(", ") || "none"}</dd>
      <dt>Output guardrails</dt>
      <dd data-testid="guardrails-output">{guardrails === undefined ? "…" : guardrails.output.join(", ") || "none"}</dd>
      <dt>Tools needing approval</dt>
      <dd data-testid="approval-tools">{approvals.join(", ") || "none"}</dd>
      {details?.workingMemory !== undefined && (
        <>
          <dt>Working memory</dt>
          <dd>per {details.workingMemory.scope}</dd>
        </>
      )}
    </dl>
  )
}

/** The agents, and for the chosen one a chat and its history. */
export const Agents = ({ path }: { path: ReadonlyArray<string> }) => {
  const agents = useLoad(() => api<ReadonlyArray<Agent>>("/agents"), [])
  const [tab, setTab] = useState<"chat" | "history" | "memory">("chat")
  const chosen = agents.data?.find((agent) => agent.id === path[0]) ?? agents.data?.[0]
  const details = useLoad(
    () => (chosen === undefined ? Promise.resolve(undefined) : api<AgentDetails>(`/agents/${segment(chosen.id)}`)),
    [chosen?.id]
  )
  const shown = details.data?.id === chosen?.id ? details.data : undefined
  const scope = shown?.workingMemory?.scope
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
                <span class="meta">tools {toolNames(agent)}</span>
                <span class="meta">memory {memoryText(agent.memory)}</span>
              </a>
            </li>
          ))}
        </ul>
      </section>
      {chosen !== undefined && (
        <section aria-label={`Agent ${chosen.id}`} class="detail">
          <h2>{chosen.name}</h2>
          <p class="meta">
            {chosen.description} · <a href={href("traces", "by", "agent", chosen.id)}>its traces</a>
          </p>
          {details.error !== undefined && <p role="alert" class="error">{details.error}</p>}
          <Safeguards agent={chosen} details={shown} />
          <div role="tablist" class="tabs">
            <button type="button" role="tab" aria-selected={tab === "chat"} onClick={() => setTab("chat")}>Chat</button>
            <button type="button" role="tab" aria-selected={tab === "history"} onClick={() => setTab("history")}>
              History
            </button>
            {scope !== undefined && (
              <button
                type="button"
                role="tab"
                aria-selected={tab === "memory"}
                onClick={() => setTab("memory")}
              >
                Working memory
              </button>
            )}
          </div>
          {tab === "memory" && scope !== undefined
            ? <WorkingMemory key={chosen.id} agentId={chosen.id} scope={scope} />
            : tab === "history"
            ? <History agentId={chosen.id} />
            : <Chat key={chosen.id} agentId={chosen.id} />}
        </section>
      )}
    </div>
  )
}
