import { isIP } from "node:net"
import type { WebhookSettings } from "../config/WebhookSettings.js"

/**
 * The SSRF stance of completion callbacks (issue #33, settled 7; issue #42, settled 9 and 10): https
 * only, to a `host[:port]` in `webhooks.allowedHosts` (an entry without a port allows 443 only); the
 * address is resolved once per delivery and the connection goes to it; only public addresses are
 * taken (an allow rule) unless the address itself is listed at that port. Checked when a URL is given
 * (400) and again at each delivery.
 */

const v4Number = (address: string): number => address.split(".").reduce((n, part) => n * 256 + Number(part), 0)

/** Non-public IPv4 ranges (IANA special-purpose, multicast, reserved), as [first address, prefix]. */
const SPECIAL_V4: ReadonlyArray<readonly [number, number]> = ([
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const).map(([net, prefix]) => [v4Number(net), prefix] as const)

const inV4 = (n: number, [net, prefix]: readonly [number, number]) =>
  Math.floor(n / 2 ** (32 - prefix)) === Math.floor(net / 2 ** (32 - prefix))

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 counted as two). */
const v6Groups = (address: string): Array<number> => {
  const text = address.replace(/%.*$/, "")
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  const n = dotted === null ? 0 : v4Number(dotted[1])
  const hex = dotted === null
    ? text
    : text.slice(0, -dotted[1].length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  const [head, tail] = hex.split("::")
  const parse = (
    part: string | undefined
  ) => (part === undefined || part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)))
  const front = parse(head)
  const back = parse(tail)
  return tail === undefined ? front : [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back]
}

/** Whether the first `bits` of `groups` are those of `prefix` (groups too). */
const inV6 = (groups: ReadonlyArray<number>, prefix: ReadonlyArray<number>, bits: number) =>
  prefix.every((group, i) => {
    const keep = Math.max(0, Math.min(16, bits - 16 * i))
    return keep === 0 || (groups[i] >> (16 - keep)) === (group >> (16 - keep))
  })

/** Ranges inside 2000::/3 that are not public: 6to4, Teredo (in 2001::/32), documentation. */
const SPECIAL_V6: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [[[0x2002], 16], [[0x2001, 0], 32], [[
  0x2001,
  0xdb8
], 32]]

/** Whether a public IPv4: outside every special-purpose range. */
const publicV4 = (address: string) => {
  const n = v4Number(address)
  return !SPECIAL_V4.some((range) => inV4(n, range))
}

/**
 * Whether an address may NOT be connected to unless listed: anything but public IPv4 and IPv6 in
 * 2000::/3 (less 6to4, Teredo and documentation). IPv4-compatible (`::a.b.c.d`), IPv4-translated
 * (`::ffff:0:a.b.c.d`) and mapped (`::ffff:a.b.c.d`) addresses are judged by the IPv4 inside; NAT64
 * (64:ff9b::/96, 64:ff9b:1::/48) is outside 2000::/3, so refused.
 */
export const isPrivateAddress = (address: string): boolean => {
  const family = isIP(address.replace(/%.*$/, ""))
  if (family === 4) return !publicV4(address)
  if (family === 0) return true
  const groups = v6Groups(address)
  const embedded = groups.slice(0, 5).every((group) => group === 0) && (groups[5] === 0 || groups[5] === 0xffff) ||
    groups.slice(0, 4).every((group) => group === 0) && groups[4] === 0xffff && groups[5] === 0
  if (embedded) return !publicV4(`${groups[6] >> 8}.${groups[6] & 0xff}.${groups[7] >> 8}.${groups[7] & 0xff}`)
  return !inV6(groups, [0x2000], 3) || SPECIAL_V6.some(([prefix, bits]) => inV6(groups, prefix, bits))
}

/** The port a URL connects to. */
const portOf = (url: URL) => (url.port === "" ? 443 : Number(url.port))

/** A host (an IPv6 literal with or without brackets) and port as the list writes them: no port for 443. */
const entryOf = (host: string, port: number) => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  const shown = isIP(bare) === 6 ? `[${bare}]` : bare.toLowerCase()
  return port === 443 ? shown : `${shown}:${port}`
}

const listed = (settings: WebhookSettings, host: string, port: number) =>
  settings.allowedHosts.includes(entryOf(host, port))

/** The URL, or why it cannot be a callback's (a message naming the reason). */
export const checkWebhookUrl = (
  raw: string,
  settings: WebhookSettings
): { readonly url: URL } | { readonly problem: string } => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { problem: "webhook.url is not an absolute URL" }
  }
  if (url.protocol !== "https:") return { problem: `webhook.url must be https, got ${url.protocol.replace(/:$/, "")}` }
  if (settings.allowedHosts.length === 0) {
    return { problem: "webhook.url: callbacks are off on this service (webhooks.allowedHosts is empty)" }
  }
  const host = url.hostname.toLowerCase()
  const port = portOf(url)
  if (listed(settings, host, port)) return { url }
  const shown = host.replace(/^\[(.*)\]$/, "$1")
  const hostListed = settings.allowedHosts.some((entry) =>
    entry === entryOf(host, 443) || entry.startsWith(`${entryOf(host, 443)}:`)
  )
  return hostListed
    ? {
      problem:
        `webhook.url: port ${port} of ${shown} is not allowed: only 443, or a port listed in webhooks.allowedHosts as ${
          entryOf(host, port)
        }`
    }
    : { problem: `webhook.url: host ${shown} is not in webhooks.allowedHosts` }
}

/**
 * The address a delivery to `host:port` connects to: the first of `addresses` (the host's, resolved
 * once) that is public, or listed itself at that port; or why none is.
 */
export const pickAddress = (
  host: string,
  port: number,
  addresses: ReadonlyArray<{ readonly address: string; readonly family: number }>,
  settings: WebhookSettings
): { readonly address: string; readonly family: number } | { readonly problem: string } => {
  const fit = addresses.find(({ address }) => !isPrivateAddress(address) || listed(settings, address, port))
  if (fit !== undefined) return fit
  return addresses.length === 0
    ? { problem: `${host} did not resolve` }
    : {
      problem: `${host} resolves to ${
        addresses[0].address
      }, not a public address, and that address is not in webhooks.allowedHosts`
    }
}

/** The URL as spans, logs and listings show it: no userinfo, the query replaced by `?redacted`. */
export const redactUrl = (raw: string): string => {
  try {
    const url = new URL(raw)
    return `${url.protocol}//${url.host}${url.pathname}${url.search === "" ? "" : "?redacted"}`
  } catch {
    return "(invalid URL)"
  }
}
