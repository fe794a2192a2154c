import type WebSocket from "ws"

export interface CollectedMessages {
  readonly messages: Array<any>
  /** Waits up to `ms` for a message (already received or still to come) that matches. */
  readonly next: (match: (message: any) => boolean, ms?: number) => Promise<any>
}

/** Collects a WebSocket's JSON messages from now on. */
export const collectMessages = (socket: WebSocket, defaultMs = 10_000): CollectedMessages => {
  const messages: Array<any> = []
  const waiters: Array<() => void> = []
  socket.on("message", (data) => {
    messages.push(JSON.parse(data.toString()))
    waiters.splice(0).forEach((wake) => wake())
  })
  const next = (match: (message: any) => boolean, ms = defaultMs) =>
    new Promise<any>((found, fail) => {
      const deadline = setTimeout(
        () => fail(new Error(`no matching message in ${ms} ms: ${JSON.stringify(messages).slice(0, 2000)}`)),
        ms
      )
      const check = () => {
        const hit = messages.find(match)
        if (hit === undefined) waiters.push(check)
        else {
          clearTimeout(deadline)
          found(hit)
        }
      }
      check()
    })
  return { messages, next }
}
