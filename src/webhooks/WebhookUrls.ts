import { BlockList, isIP } from "node:net"
import type { WebhookSettings } from "../config/WebhookSettings.js"

/**
 * The SSRF stance of completion callbacks (issue #33, settled 7): https only, to a host in
 * `webhooks.allowedHosts`; the address is resolved once per delivery and the connection goes to it;
 * private, loopback, link-local and metadata addresses are refused unless the address itself is
 * listed. Checked when a URL is given (400) and again at each delivery.
 */

const blocked = new BlockList()
for (const [net, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4]
] as const) blocked.addSubnet(net, prefix, "ipv4")
for (const [net, prefix] of [
  ["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8], ["64:ff9b::", 96], ["100::", 64]
] as const) blocked.addSubnet(net, prefix, "ipv6")

/** Whether an address is private, loopback, link-local, metadata (169.254.169.254, fd00:ec2::254) or otherwise not public. */
export const isPrivateAddress = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return isPrivateAddress(mapped[1])
  const family = isIP(address)
  if (family === 0) return true
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

/** A host as compared with the list: lower case, an IPv6 literal without its brackets. */
const hostOf = (url: URL) => url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1")

const listed = (settings: WebhookSettings, host: string) => settings.allowedHosts.includes(host)

/** The URL, or why it cannot be a callback's (a message naming the reason). */
export const checkWebhookUrl = (raw: string, settings: WebhookSettings): { readonly url: URL } | { readonly problem: string } => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { problem: "webhook.url is not an absolute URL" }
  }
  if (url.protocol !== "https:") return { problem: `webhook.url must be https, got ${url.protocol.replace(/:$/, "")}` }
  if (settings.allowedHosts.length === 0) return { problem: "webhook.url: callbacks are off on this service (webhooks.allowedHosts is empty)" }
  const host = hostOf(url)
  if (!listed(settings, host)) return { problem: `webhook.url: host ${host} is not in webhooks.allowedHosts` }
  return { url }
}

/**
 * The address a delivery connects to: the first of `addresses` (the host's, resolved once) that is
 * public, or listed itself; or why none is.
 */
export const pickAddress = (
  host: string,
  addresses: ReadonlyArray<{ readonly address: string; readonly family: number }>,
  settings: WebhookSettings
): { readonly address: string; readonly family: number } | { readonly problem: string } => {
  const fit = addresses.find(({ address }) => !isPrivateAddress(address) || listed(settings, address.toLowerCase()))
  if (fit !== undefined) return fit
  return addresses.length === 0
    ? { problem: `${host} did not resolve` }
    : { problem: `${host} resolves to ${addresses[0].address}, a private, loopback, link-local or metadata address not in webhooks.allowedHosts` }
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
