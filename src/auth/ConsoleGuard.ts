import { isIP } from "node:net"
import { hostname } from "node:os"
import { isLoopbackHost } from "../config/AuthSettings.js"
import { Forbidden, Unauthorized } from "../core/errors.js"

/**
 * Console routes (updates, setup, observability, logs) act on the developer's machine and are open
 * without a key outside production on a loopback address, so a page the developer visits must not reach them: they answer no
 * CORS, refuse a foreign `Origin` and a `Host` that is not an address of the service (DNS rebinding),
 * and writes need a header a cross-site form cannot send.
 */
export const DEV_HEADER = "x-service-dev"

export interface ConsoleGuardOptions {
  /** The address the service listens on (`--host`). */
  readonly host: string
  readonly production: boolean
}

export interface GuardedRequest {
  readonly method: string
  readonly headers: Readonly<Record<string, string | undefined>>
}

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"]

const bare = (host: string) => host.replace(/^\[(.*)\]$/, "$1")

const isWildcard = (host: string) => ["0.0.0.0", "::", "[::]"].includes(host)

/** URL's spelling of a host: lower case, IPv6 in brackets, IPv4 in dotted decimal. */
const normalise = (host: string): string | undefined => {
  try {
    return new URL(`http://${isIP(host) === 6 ? `[${host}]` : host}`).hostname
  } catch {
    return undefined
  }
}

/**
 * Which names a request may use for the service in its `Host`: the listening address; the loopback
 * names when it listens on loopback; any IP literal, `localhost` and this machine's name when it listens
 * on every interface. A DNS name pointing here (what a rebinding attack uses) is never among them.
 */
export const allowedHost = (listening: string): (name: string) => boolean => {
  const names = new Set([normalise(listening)])
  if (isLoopbackHost(listening)) LOOPBACK_NAMES.forEach((name) => names.add(name))
  if (isWildcard(listening)) {
    names.add("localhost")
    names.add(normalise(hostname()))
  }
  return (name) => names.has(name) || (isWildcard(listening) && isIP(bare(name)) !== 0)
}

const parse = (url: string): URL | undefined => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}

const portOf = (url: URL) => url.port || (url.protocol === "https:" ? "443" : "80")

const READS = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * Why a request to a console route is refused, or undefined when it may go on (to the console key check,
 * in production). An own origin is http(s) on an allowed host name and the port the request came to.
 */
export const consoleRefusal = (options: ConsoleGuardOptions) => {
  const isAllowed = allowedHost(options.host)
  return (request: GuardedRequest): Forbidden | Unauthorized | undefined => {
    const host = request.headers["host"]
    const target = host === undefined ? undefined : parse(`http://${host}`)
    if (target === undefined || !isAllowed(target.hostname)) {
      return new Forbidden({
        message: "Console routes answer only on the addresses the service listens on (Host refused)"
      })
    }
    const originHeader = request.headers["origin"]
    if (originHeader !== undefined) {
      const origin = parse(originHeader)
      const own = origin !== undefined && (origin.protocol === "http:" || origin.protocol === "https:") &&
        isAllowed(origin.hostname) &&
        portOf(origin) === portOf(new URL(`${origin.protocol}//${host}`))
      if (!own) return new Forbidden({ message: "Console routes refuse cross-origin requests" })
    }
    if (!options.production && !READS.has(request.method) && request.headers[DEV_HEADER]?.toLowerCase() !== "true") {
      return new Unauthorized({ message: `Console writes need the header ${DEV_HEADER}: true` })
    }
    return undefined
  }
}
