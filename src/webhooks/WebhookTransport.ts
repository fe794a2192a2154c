import { Effect } from "effect"
import { lookup } from "node:dns/promises"
import { request } from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { rootCertificates } from "node:tls"
import type { WebhookSettings } from "../config/WebhookSettings.js"
import { checkWebhookUrl, pickAddress } from "./WebhookUrls.js"

/** A delivery attempt's wait for the whole answer at most. */
export const DELIVERY_TIMEOUT_MS = 10_000
/** Bytes of an answer read at most; the rest is not read. */
export const RESPONSE_READ_MAX = 4096

/**
 * What a failed attempt records and lists (issue #42, settled 9): a class, never the socket's message
 * (which told a closed port from a filtered one, or a TLS service from another one).
 */
export type FailureClass = "connect failed" | "tls failed" | "timeout" | `http ${number}`
/** Why an attempt was not made (not retried): the URL or the address the host resolved to. */
export type RefusalClass = "url not allowed" | "did not resolve" | "not a public address"

/**
 * How an attempt went: the receiver's status (2xx: delivered), a failure to retry, or a refusal (not
 * retried); `detail` is for the operator's log only.
 */
export type AttemptOutcome =
  | { readonly _tag: "Answered"; readonly status: number }
  | { readonly _tag: "Failed"; readonly error: FailureClass; readonly detail: string }
  | { readonly _tag: "Refused"; readonly error: RefusalClass; readonly detail: string }

/**
 * POSTs `body` to `raw` (checked again against the settings): its host resolved once, the connection
 * pinned to the address picked (node's `lookup` option), TLS verified against Node's CAs and the
 * configured CA file, no redirects followed, at most RESPONSE_READ_MAX bytes read, `timeoutMs`
 * (DELIVERY_TIMEOUT_MS) for the whole.
 */
export const postWebhook = (
  raw: string,
  body: string,
  headers: Record<string, string>,
  settings: WebhookSettings,
  timeoutMs: number = DELIVERY_TIMEOUT_MS
): Effect.Effect<AttemptOutcome> =>
  Effect.gen(function*() {
    const checked = checkWebhookUrl(raw, settings)
    if ("problem" in checked) return { _tag: "Refused", error: "url not allowed", detail: checked.problem } as const
    const url = checked.url
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1")
    const port = url.port === "" ? 443 : Number(url.port)
    const resolved = isIP(host) !== 0
      ? [{ address: host, family: isIP(host) }]
      : yield* Effect.promise(() => lookup(host, { all: true, verbatim: true }).catch(() => [])).pipe(
        // The system resolver has no timeout of its own.
        Effect.timeoutTo({ duration: timeoutMs, onTimeout: () => [], onSuccess: (found) => found })
      )
    const target = pickAddress(host, port, resolved, settings)
    if ("problem" in target) {
      return {
        _tag: "Refused",
        error: resolved.length === 0 ? "did not resolve" : "not a public address",
        detail: target.problem
      } as const
    }
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all === true) {
        ;(callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target])
      } else callback(null, target.address, target.family)
    }
    return yield* Effect.async<AttemptOutcome>((resume) => {
      let done = false
      const finish = (outcome: AttemptOutcome) => {
        if (done) return
        done = true
        clearTimeout(timer)
        req.destroy()
        resume(Effect.succeed(outcome))
      }
      const req = request({
        method: "POST",
        host,
        port,
        path: `${url.pathname}${url.search}`,
        lookup: pinned,
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(settings.ca === undefined ? {} : { ca: [...rootCertificates, settings.ca] }),
        agent: false,
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "user-agent": "workflow-webhooks/1"
        }
      }, (response) => {
        let read = 0
        const status = response.statusCode ?? 0
        const answered = () =>
          finish(
            status >= 300 && status < 400
              ? { _tag: "Failed", error: `http ${status}`, detail: "redirects are not followed" }
              : { _tag: "Answered", status }
          )
        response.on("data", (chunk: Buffer) => {
          read += chunk.length
          if (read >= RESPONSE_READ_MAX) answered()
        })
        response.on("end", answered)
        response.on("error", answered)
      })
      const timer = setTimeout(
        () => finish({ _tag: "Failed", error: "timeout", detail: `no answer within ${timeoutMs} ms` }),
        timeoutMs
      )
      // A connection that got as far as TCP and failed before TLS was set up failed TLS.
      let stage: "connect failed" | "tls failed" = "connect failed"
      req.on("socket", (socket) =>
        socket.once("connect", () => (stage = "tls failed")).once("secureConnect", () => (stage = "connect failed")))
      req.on("error", (error) =>
        finish({ _tag: "Failed", error: stage, detail: error.message.slice(0, 300) }))
      req.end(body)
      return Effect.sync(() =>
        finish({ _tag: "Failed", error: "connect failed", detail: "interrupted" })
      )
    })
  })
