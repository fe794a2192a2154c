/** One Server-Sent Event: its id (when sent) and its data parsed as JSON. */
export interface SseEvent {
  readonly id: string | undefined
  readonly data: unknown
}

/**
 * Reads an SSE body (the service's frames: optional `id:`, one `data:` line of JSON) until it ends or
 * `signal` aborts. fetch rather than EventSource, which cannot send the credentials' headers.
 */
export const readSse = async (
  body: ReadableStream<Uint8Array>,
  onEvent: (event: SseEvent) => void,
  signal: AbortSignal
) => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const cancel = () => void reader.cancel().catch(() => {})
  signal.addEventListener("abort", cancel)
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n")
      let end = buffer.indexOf("\n\n")
      while (end !== -1) {
        const frame = parseFrame(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
        if (frame !== undefined) onEvent(frame)
        end = buffer.indexOf("\n\n")
      }
    }
  } finally {
    signal.removeEventListener("abort", cancel)
  }
}

const parseFrame = (frame: string): SseEvent | undefined => {
  let id: string | undefined
  const data: Array<string> = []
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value
    else if (field === "data") data.push(value)
  }
  if (data.length === 0) return undefined
  try {
    return { id, data: JSON.parse(data.join("\n")) }
  } catch {
    return undefined
  }
}
