import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { createServer as createTcpServer } from "node:net"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { defaultWebhookSettings, WebhooksConfigFile } from "../src/config/WebhookSettings.js"
import { postWebhook } from "../src/webhooks/WebhookTransport.js"
import { checkWebhookUrl, isPrivateAddress, pickAddress } from "../src/webhooks/WebhookUrls.js"
import { CERT, makeReceiver } from "./support/webhooks.js"

/**
 * Issue #42 items 10 and 11 (settled 9, 10): the SSRF allow rule with every embedded-IPv4 form, the
 * port rule (443 unless an allowed-host entry names its port), and `lastError` as a class only.
 */

const settings = { ...defaultWebhookSettings, allowedHosts: ["hooks.example.com", "hooks.example.com:8443"] }
const problem = (url: string, s = settings) => {
  const checked = checkWebhookUrl(url, s)
  return "problem" in checked ? checked.problem : undefined
}

describe("the SSRF allow rule (settled 10)", () => {
  it("refuses every loopback spelling a URL can give, once the URL parser has normalised it", () => {
    const forms = [
      "[::127.0.0.1]",
      "[::ffff:0:7f00:1]",
      "[::ffff:127.0.0.1]",
      "[64:ff9b::7f00:1]",
      "2130706433",
      "0177.0.0.1",
      "0x7f.0.0.1",
      "0x7f000001",
      "127.1"
    ]
    for (const form of forms) {
      const host = new URL(`https://${form}/`).hostname.replace(/^\[(.*)\]$/, "$1")
      expect(isPrivateAddress(host), `${form} (${host})`).toBe(true)
      // A listed name that resolves there is refused at delivery.
      expect(
        pickAddress("hooks.example.com", 443, [{ address: host, family: host.includes(":") ? 6 : 4 }], settings),
        form
      )
        .toMatchObject({ problem: expect.stringContaining("not a public address") })
    }
  })

  it("takes public IPv4 and IPv6 in 2000::/3 only, judging the IPv4 inside every embedded form", () => {
    const refused = [
      "::7f00:1",
      "::ffff:0:7f00:1",
      "::ffff:7f00:1",
      "::a00:1",
      "::ffff:0:a00:1",
      "::ffff:a9fe:a9fe",
      "::",
      "::1",
      "64:ff9b::808:808",
      "64:ff9b:1::1",
      "2002:7f00:1::1",
      "2001::1",
      "2001:0:4136:e378::1",
      "2001:db8::1",
      "fe80::1",
      "fd00:ec2::254",
      "fc00::1",
      "ff02::1",
      "100::1",
      "4000::1",
      "0.1.2.3",
      "10.1.2.3",
      "100.64.0.1",
      "127.0.0.1",
      "169.254.169.254",
      "172.16.0.1",
      "192.0.0.8",
      "192.0.2.1",
      "192.88.99.1",
      "192.168.1.1",
      "198.18.0.1",
      "198.51.100.1",
      "203.0.113.1",
      "224.0.0.1",
      "240.0.0.1",
      "255.255.255.255",
      "not an address"
    ]
    for (const address of refused) expect(isPrivateAddress(address), address).toBe(true)
    const taken = [
      "8.8.8.8",
      "93.184.216.34",
      "2606:2800:220:1::1",
      "2001:4860:4860::8888",
      "::ffff:8.8.8.8",
      "::8.8.8.8",
      "::ffff:0:808:808",
      "3fff::1"
    ]
    for (const address of taken) expect(isPrivateAddress(address), address).toBe(false)
  })

  it("still permits a private address listed literally (with its port)", () => {
    const local = { ...defaultWebhookSettings, allowedHosts: ["127.0.0.1:8443", "[::1]:9443"] }
    expect(problem("https://127.0.0.1:8443/x", local)).toBeUndefined()
    expect(pickAddress("127.0.0.1", 8443, [{ address: "127.0.0.1", family: 4 }], local)).toEqual({
      address: "127.0.0.1",
      family: 4
    })
    expect(pickAddress("[::1]", 9443, [{ address: "::1", family: 6 }], local)).toEqual({ address: "::1", family: 6 })
    // The listing names the address at that port only.
    expect(pickAddress("127.0.0.1", 9443, [{ address: "127.0.0.1", family: 4 }], local)).toHaveProperty("problem")
  })
})

describe("the port rule (settled 9)", () => {
  it("allows 443 unless an entry names host:port; a URL naming another port is refused naming the setting", () => {
    expect(problem("https://hooks.example.com/x")).toBeUndefined()
    expect(problem("https://hooks.example.com:443/x")).toBeUndefined()
    expect(problem("https://hooks.example.com:8443/x")).toBeUndefined()
    expect(problem("https://hooks.example.com:22/x")).toBe(
      "webhook.url: port 22 of hooks.example.com is not allowed: only 443, or a port listed in webhooks.allowedHosts as hooks.example.com:22"
    )
    expect(problem("https://other.example.com:8443/x")).toContain(
      "host other.example.com is not in webhooks.allowedHosts"
    )
    const portOnly = { ...defaultWebhookSettings, allowedHosts: ["hooks.example.com:8443"] }
    expect(problem("https://hooks.example.com/x", portOnly)).toContain("port 443 of hooks.example.com is not allowed")
  })

  it("normalises the entries of the setting: case, a default port, IPv6 brackets, IPv4 spellings; a bad entry stops the start", () => {
    const hosts = resolveServerConfig({
      webhooks: {
        allowedHosts: ["Hooks.Example.com:443", "hooks.example.com:8443", "::1", "[::1]:9443", "0x7f.0.0.1:8443"]
      }
    }, {}).webhooks?.allowedHosts
    expect(hosts).toEqual(["hooks.example.com", "hooks.example.com:8443", "[::1]", "[::1]:9443", "127.0.0.1:8443"])
    expect(
      resolveServerConfig({}, { WEBHOOK_ALLOWED_HOSTS: "a.example.com:8443, B.example.com" }).webhooks?.allowedHosts
    ).toEqual(["a.example.com:8443", "b.example.com"])
    for (const bad of ["a.example.com:99999", "a.example.com/path", "user@a.example.com", "a.example.com:x"]) {
      expect(() => resolveServerConfig({ webhooks: { allowedHosts: [bad] } }, {}), bad).toThrow(/webhooks.allowedHosts/)
    }
    expect(() => resolveServerConfig({}, { WEBHOOK_ALLOWED_HOSTS: "a.example.com:0x1bb" })).toThrow(
      /WEBHOOK_ALLOWED_HOSTS: "a.example.com:0x1bb" is not host or host:port/
    )
  })

  it("reads webhooks.maxInFlightPerOwner: 8 of the instance's 64 by default, 1 to 64", () => {
    expect(resolveServerConfig({}, {}).webhooks?.maxInFlightPerOwner).toBe(8)
    expect(resolveServerConfig({ webhooks: { maxInFlightPerOwner: 2 } }, {}).webhooks?.maxInFlightPerOwner).toBe(2)
    const decode = Schema.decodeUnknownEither(WebhooksConfigFile)
    expect(Either.isRight(decode({ maxInFlightPerOwner: 64 }))).toBe(true)
    for (const bad of [0, 65, 1.5]) expect(Either.isLeft(decode({ maxInFlightPerOwner: bad })), String(bad)).toBe(true)
  })
})

/** A TCP server on a free port that answers whatever it is sent with plain text (no TLS). */
const plainServer = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly close: () => void }>((resume) => {
    const server = createTcpServer((socket) => socket.end("SSH-2.0-OpenSSH_9.6 not tls\r\n"))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resume(
        Effect.succeed({
          port: typeof address === "object" && address !== null ? address.port : 0,
          close: () => server.close()
        })
      )
    })
  }),
  (server) => Effect.sync(() => server.close())
)

describe("lastError classes (settled 9)", () => {
  const hooked = (port: number, ca = true) => ({
    ...defaultWebhookSettings,
    allowedHosts: [`127.0.0.1:${port}`],
    ...(ca ? { ca: CERT } : {})
  })
  const post = (port: number, ca = true, timeoutMs?: number) =>
    postWebhook(`https://127.0.0.1:${port}/`, "{}", {}, hooked(port, ca), timeoutMs)

  it.scoped("a closed port is `connect failed`, a service that is not TLS or a certificate not trusted is `tls failed`, silence is `timeout`", () =>
    Effect.gen(function*() {
      const plain = yield* plainServer
      plain.close()
      expect(yield* post(plain.port)).toMatchObject({ _tag: "Failed", error: "connect failed" })
      const other = yield* plainServer
      expect(yield* post(other.port)).toMatchObject({ _tag: "Failed", error: "tls failed" })
      const receiver = yield* makeReceiver()
      expect(yield* post(receiver.port, false)).toMatchObject({ _tag: "Failed", error: "tls failed" })
      const silent = yield* makeReceiver([], { answer: false })
      expect(yield* post(silent.port, true, 300)).toMatchObject({ _tag: "Failed", error: "timeout" })
      const failing = yield* makeReceiver([503, 302])
      expect(yield* post(failing.port)).toEqual({ _tag: "Answered", status: 503 })
      expect(yield* post(failing.port)).toMatchObject({ _tag: "Failed", error: "http 302" })
      expect(yield* post(failing.port)).toEqual({ _tag: "Answered", status: 200 })
    }))
})
