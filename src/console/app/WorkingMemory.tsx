import { useState } from "preact/hooks"
import { messageOf } from "../../core/errorMessages.js"
import { api, query, segment } from "./api.js"
import { chatConversation } from "./Chat.js"
import { Json } from "./Json.js"
import { useLoad } from "./load.js"
import type { WorkingMemory as WorkingMemoryRecord } from "./types.js"

/**
 * The agent's working memory record: per conversation (the chat's, or one typed in) or per user (the
 * caller's, from its token; without authentication, the user id typed in). Shown as stored, with a
 * button to delete it.
 */
export const WorkingMemory = ({ agentId, scope }: { agentId: string; scope: "user" | "conversation" }) => {
  const [key, setKey] = useState(() => (scope === "conversation" ? chatConversation(agentId) ?? "" : ""))
  const [typed, setTyped] = useState(key)
  const [deleteError, setDeleteError] = useState<string | undefined>(undefined)
  const params = scope === "conversation" ? { conversationId: key } : { userId: key }
  const path = `/agents/${segment(agentId)}/working-memory${query(params)}`
  const record = useLoad(
    () => (scope === "conversation" && key === "" ? Promise.resolve(undefined) : api<WorkingMemoryRecord>(path)),
    [path]
  )
  const clear = () => {
    setDeleteError(undefined)
    api(path, { method: "DELETE" }).then(record.reload, (error: unknown) => setDeleteError(messageOf(error)))
  }
  return (
    <div class="working-memory" data-testid="working-memory">
      <form
        class="row"
        onSubmit={(event) => {
          event.preventDefault()
          setKey(typed.trim())
        }}
      >
        <label>
          {scope === "conversation" ? "Conversation" : "User (only without authentication; else the signed-in user)"}
          {" "}
          <input value={typed} onInput={(event) => setTyped(event.currentTarget.value)} size={40} />
        </label>
        <button type="submit">Show</button>
      </form>
      {record.error !== undefined && <p role="alert" class="error">{record.error}</p>}
      {deleteError !== undefined && <p role="alert" class="error">{deleteError}</p>}
      {record.data !== undefined && (
        <div>
          <p class="meta" data-testid="working-memory-version">
            {record.data.version === 0
              ? "nothing saved yet"
              : `version ${record.data.version}, updated ${new Date(record.data.updatedAt ?? "").toLocaleString()}`}
          </p>
          {record.data.value !== null && <Json label="record" value={record.data.value} />}
          <div class="row">
            <button type="button" onClick={record.reload}>Refresh</button>
            <button
              type="button"
              data-testid="working-memory-clear"
              disabled={record.data.version === 0}
              onClick={clear}
            >
              Clear
            </button>
          </div>
        </div>
      )}
    </div>
  )
}
