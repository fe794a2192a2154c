import { Effect, type Scope } from "effect"
import { createServer } from "node:http"

/** What a local OTLP/HTTP collector was sent: every body as text, and the OTLP/JSON ones parsed by signal. */
export interface OtlpReceived {
  readonly url: string
  readonly texts: Array<string>
  readonly traces: Array<any>
  readonly metrics: Array<any>
  readonly logs: Array<any>
}

/** A local OTLP/HTTP collector on a free port for the scope; it answers every export with 200. */
export const otlpReceiver: Effect.Effect<OtlpReceived, never, Scope.Scope> = Effect.gen(function*() {
  const texts: Array<string> = []
  const traces: Array<any> = []
  const metrics: Array<any> = []
  const logs: Array<any> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk) => chunks.push(chunk))
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString()
      texts.push(text)
      try {
        const body = JSON.parse(text)
        if (request.url === "/v1/traces") traces.push(body)
        if (request.url === "/v1/metrics") metrics.push(body)
        if (request.url === "/v1/logs") logs.push(body)
      } catch {
        // not OTLP/JSON: kept as text only
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
    () => Effect.sync(() => server.close())
  )
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return { url: `http://127.0.0.1:${port}`, texts, traces, metrics, logs }
})
