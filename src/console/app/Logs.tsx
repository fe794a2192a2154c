import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks"
import { credentialsEpoch, credentialsPrompt, socketParams } from "./credentials.js"
import { href } from "./route.js"
import { useStore } from "./store.js"
import type { LogEntry } from "./types.js"

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const
const ENTITIES = [
  { param: "agentId", label: "agent" },
  { param: "workflowId", label: "workflow" },
  { param: "executionId", label: "execution" },
  { param: "conversationId", label: "conversation" }
] as const
/** Lines kept on screen; older ones scroll away. */
const KEEP = 500
/** Pixels from the bottom that still count as at the bottom (zoom leaves fractions). */
const FOLLOW_SLACK = 8

type Connection = "connecting" | "live" | "closed" | "refused"

const entityOf = (log: LogEntry) =>
  log.executionId !== undefined ?
    `execution ${log.executionId}` :
    log.workflowId !== undefined ?
    `workflow ${log.workflowId}` :
    log.agentId !== undefined
    ? `agent ${log.agentId}`
    : ""

/** A live tail of the logs over /ws/logs, filtered by level and entity (on the server), pausable. */
export const Logs = () => {
  const epoch = useStore(credentialsEpoch)
  const [level, setLevel] = useState("")
  const [entity, setEntity] = useState<(typeof ENTITIES)[number]["param"]>("agentId")
  const [entityId, setEntityId] = useState("")
  const [paused, setPaused] = useState(false)
  const [lines, setLines] = useState<ReadonlyArray<LogEntry>>([])
  const [held, setHeld] = useState<ReadonlyArray<LogEntry>>([])
  const [connection, setConnection] = useState<Connection>("connecting")
  const pausedRef = useRef(paused)
  pausedRef.current = paused
  const pane = useRef<HTMLOListElement>(null)
  // Whether the pane follows the tail: it does while the user is at its bottom, and stops when they scroll up.
  const following = useRef(true)
  useLayoutEffect(() => {
    const element = pane.current
    if (element !== null && following.current) element.scrollTop = element.scrollHeight
  }, [lines])
  const onScroll = () => {
    const element = pane.current
    if (element !== null) {
      following.current = element.scrollHeight - element.scrollTop - element.clientHeight <= FOLLOW_SLACK
    }
  }

  useEffect(() => {
    const params = socketParams(new URLSearchParams())
    if (level !== "") params.set("level", level)
    if (entityId.trim() !== "") params.set(entity, entityId.trim())
    const socket = new WebSocket(
      `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/logs?${params}`
    )
    let opened = false
    setLines([])
    setHeld([])
    setConnection("connecting")
    following.current = true
    socket.onopen = () => {
      opened = true
      setConnection("live")
    }
    socket.onclose = () => {
      setConnection(opened ? "closed" : "refused")
      // A handshake refused before it opened is, for this route, an authentication failure.
      if (!opened) credentialsPrompt.set("the logs socket refused the connection (console key?)")
    }
    socket.onmessage = (message) => {
      let payload: { type?: string; logs?: ReadonlyArray<LogEntry> }
      try {
        payload = JSON.parse(String(message.data))
      } catch {
        return
      }
      const logs = payload.logs ?? []
      if (payload.type === "initial") setLines(logs.slice(-KEEP))
      else if (pausedRef.current) setHeld((held) => [...held, ...logs].slice(-KEEP))
      else setLines((lines) => [...lines, ...logs].slice(-KEEP))
    }
    return () => socket.close()
  }, [level, entity, entityId, epoch])

  const resume = () => {
    setLines((lines) => [...lines, ...held].slice(-KEEP))
    setHeld([])
    setPaused(false)
  }

  return (
    <section aria-labelledby="logs-heading">
      <div class="row">
        <h1 id="logs-heading">Logs</h1>
        <span class={`status ${connection}`} role="status">{connection}</span>
      </div>
      <div class="row filters">
        <label>
          Level at least
          <select value={level} onChange={(event) => setLevel(event.currentTarget.value)}>
            <option value="">any</option>
            {LEVELS.map((level) => <option key={level} value={level}>{level}</option>)}
          </select>
        </label>
        <label>
          Entity
          <select value={entity} onChange={(event) => setEntity(event.currentTarget.value as typeof entity)}>
            {ENTITIES.map(({ label, param }) => <option key={param} value={param}>{label}</option>)}
          </select>
        </label>
        <label>
          Id
          <input value={entityId} onChange={(event) => setEntityId(event.currentTarget.value)} />
        </label>
        {paused
          ? <button type="button" onClick={resume}>Resume ({held.length} waiting)</button>
          : <button type="button" onClick={() => setPaused(true)}>Pause</button>}
        <button type="button" onClick={() => ((following.current = true), setLines([]))}>Clear</button>
      </div>
      <ol class="log-lines" role="log" aria-live="off" ref={pane} onScroll={onScroll}>
        {lines.map((log, index) => (
          <li key={index} data-testid="log-line" class={`log ${log.level}`}>
            <span class="meta">{log.timestamp}</span> <span class="level">{log.level}</span>{" "}
            <span class="log-message">{log.message}</span> <span class="meta">{entityOf(log)}</span>
            {log.traceId !== undefined && (
              <>
                {" "}
                <a href={href("traces", log.traceId)}>trace</a>
              </>
            )}
          </li>
        ))}
      </ol>
    </section>
  )
}
