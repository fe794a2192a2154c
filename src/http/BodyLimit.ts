import { type HttpApp, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Option } from "effect"
import type { IncomingMessage } from "node:http"
import { PayloadTooLarge } from "../core/errors.js"

// How much of an oversized chunked body is read and discarded so the 413 can still be delivered.
const DRAIN_FACTOR = 4

const readChunked = (incoming: IncomingMessage, limit: number): Effect.Effect<string, PayloadTooLarge> =>
  Effect.async<string, PayloadTooLarge>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    let over = false
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (over) {
        if (bytes > limit * DRAIN_FACTOR) incoming.destroy()
        return
      }
      if (bytes > limit) {
        over = true
        chunks.length = 0
        return resume(Effect.fail(PayloadTooLarge.of(limit)))
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      if (!over) resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    return Effect.sync(() => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
    })
  })

// The request as the platform's own, but with its body already read (it can be read only once). Only
// `text` is replaced: `json` is always read through JsonInput.withCheckedJsonBody, which parses `text`.
// A proxy, not `Object.create(request)`, for the reason given there.
const withBodyText = (request: HttpServerRequest.HttpServerRequest, text: string) => {
  const body = Effect.succeed(text)
  return new Proxy(request, { get: (target, key) => (key === "text" ? body : Reflect.get(target, key, target)) })
}

/**
 * Bounds every request body. With content-length the check happens before reading. A chunked body is
 * read here, counted as it arrives; past the limit the rest is drained (up to a bound) so the client
 * receives a 413 instead of a reset connection.
 */
export const limitBody = <E, R>(app: HttpApp.Default<E, R>, limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = request.headers["content-length"]
    if (declared !== undefined) {
      if (Number(declared) > limit) return yield* PayloadTooLarge.of(limit)
      return yield* HttpServerRequest.withMaxBodySize(app, Option.some(limit))
    }
    if (request.headers["transfer-encoding"] === undefined) return yield* app
    const text = yield* readChunked(NodeHttpServerRequest.toIncomingMessage(request), limit)
    return yield* Effect.provideService(app, HttpServerRequest.HttpServerRequest, withBodyText(request, text))
  })
