import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { type IncomingMessage, request } from "node:http"
import { TestServer, TestServerLive } from "./support/TestServer.js"

/** A raw GET, so that Host can be anything (fetch does not let a caller set it). */
const rawGet = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }>((resolve, reject) => {
      const req = request(url, { headers }, (response) => {
        let body = ""
        response.setEncoding("utf8")
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }))
      })
      req.on("error", reject)
      req.end()
    })
  )

const forged = { host: "evil.example", "x-forwarded-proto": "javascript" }

layer(TestServerLive(), { excludeTestServices: true })("the service's own URL and pages", (it) => {
  it.effect("the A2A card's url is the listening address, whatever Host and X-Forwarded-Proto say", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const card = yield* rawGet(`${url}/agents/assistant/card`, forged)
      expect(card.status).toBe(200)
      expect(JSON.parse(card.body).data.url).toBe(`${url}/agents/assistant`)
    }))

  it.effect("/ and /ui send a CSP that allows only their own inline code, and refuse framing", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const path of ["/", "/ui"]) {
        const page = yield* rawGet(`${url}${path}`)
        expect(page.status, path).toBe(200)
        const csp = String(page.headers["content-security-policy"])
        expect(csp, path).toContain("default-src 'none'")
        expect(csp, path).toContain("frame-ancestors 'none'")
        expect(csp, path).not.toContain("'unsafe-inline'; script")
        expect(csp, path).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/)
        expect(page.headers["x-frame-options"], path).toBe("DENY")
        expect(page.headers["x-content-type-options"], path).toBe("nosniff")
        // Every inline script that runs is allowed by its hash.
        const scripts = [...page.body.matchAll(/<script(?![^>]*type="application\/json")[^>]*>([\s\S]*?)<\/script>/g)]
          .map((m) => m[1])
        for (const script of scripts) {
          expect(csp, path).toContain(`'sha256-${createHash("sha256").update(script).digest("base64")}'`)
        }
        const styles = [...page.body.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1])
        expect(styles.length, path).toBeGreaterThan(0)
        for (const style of styles) {
          expect(csp, path).toMatch(
            new RegExp(
              `style-src[^;]*('sha256-${
                createHash("sha256").update(style).digest("base64").replace(/[+/]/g, "\\$&")
              }'|'unsafe-inline')`
            )
          )
        }
      }
    }))
})

layer(TestServerLive({ config: { publicUrl: "https://agents.example.com/base/" } }), { excludeTestServices: true })(
  "a configured public URL",
  (it) => {
    it.effect("is the A2A card's base", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const card = yield* rawGet(`${url}/agents/assistant/card`, forged)
        expect(JSON.parse(card.body).data.url).toBe("https://agents.example.com/base/agents/assistant")
      }))
  }
)
