import { describe, expect, it, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Option, Redacted, Schema } from "effect"
import { exportSPKI, generateKeyPair, SignJWT } from "jose"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { makeAuthPolicy } from "../src/auth/AuthPolicy.js"
import { compilePublicRoutes } from "../src/auth/publicRoutes.js"
import type { AuthSettings, JwtSettings } from "../src/config/AuthSettings.js"
import { add, getWeather, whoami } from "../src/examples/tools.js"
import { approval } from "../src/examples/workflows.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const SECRET = "a-long-shared-secret-for-tests-only"
const rsa = await generateKeyPair("RS256", { extractable: true })
const RSA_PEM = await exportSPKI(rsa.publicKey)
const secretKey = (secret: string) => new TextEncoder().encode(secret)
const now = () => Math.floor(Date.now() / 1000)

const sign = (
  claims: Record<string, unknown>,
  options: { secret?: string; alg?: string; exp?: number | null; nbf?: number; iat?: number | null; typ?: string } = {}
) => {
  const jwt = new SignJWT({ sub: "ada", role: "admin", ...claims })
    .setProtectedHeader({ alg: options.alg ?? "HS256", ...(options.typ === undefined ? {} : { typ: options.typ }) })
  if (options.iat !== null) jwt.setIssuedAt(options.iat)
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? now() + 3600)
  if (options.nbf !== undefined) jwt.setNotBefore(options.nbf)
  return jwt.sign(secretKey(options.secret ?? SECRET))
}
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const tokens = {
  valid: await sign({}),
  expired: await sign({}, { exp: now() - 60 }),
  notYet: await sign({}, { nbf: now() + 3600 }),
  badSignature: await sign({}, { secret: "another-secret-of-sufficient-length" }),
  none: `${b64({ alg: "none", typ: "JWT" })}.${b64({ sub: "ada", exp: now() + 3600 })}.`,
  rs256: await new SignJWT({ sub: "rsa-user" }).setProtectedHeader({ alg: "RS256" }).setIssuedAt().setExpirationTime(
    now() + 3600
  ).sign(rsa.privateKey),
  hmacWithPublicKey: await sign({}, { secret: RSA_PEM }),
  wrongAudience: await sign({ aud: "someone-else", iss: "issuer" }),
  wrongIssuer: await sign({ aud: "service", iss: "impostor" }),
  rightAudience: await sign({ aud: "service", iss: "issuer" }),
  noSubject: await sign({ sub: undefined, role: "user" }),
  emptySubject: await sign({ sub: "", role: "user" }),
  noExp: await sign({}, { exp: null }),
  issuedInTheFuture: await sign({}, { iat: now() + 600 }),
  issuedWithinSkew: await sign({}, { iat: now() + 10 }),
  notBeforeWithinSkew: await sign({}, { nbf: now() + 10 }),
  expiredWithinSkew: await sign({}, { exp: now() - 10 }),
  // Issue #42 item 13: a token for year 9999, one without `iat`, and types other than an access token's.
  year9999: await sign({}, { exp: 253402300799 }),
  dayLong: await sign({}, { iat: now(), exp: now() + 86_400 }),
  dayAndASecond: await sign({}, { iat: now(), exp: now() + 86_401 }),
  noIat: await sign({}, { iat: null }),
  noExpOldIat: await sign({}, { exp: null, iat: now() - 2 * 86_400 }),
  noExpNoIat: await sign({}, { exp: null, iat: null }),
  typed: Object.fromEntries(
    await Promise.all(
      [
        "JWT",
        "jwt",
        "at+jwt",
        "application/at+JWT",
        "APPLICATION/jwt",
        "refresh+jwt",
        "id_token+jwt",
        "application/refresh+jwt",
        "JOSE"
      ]
        .map(async (typ) => [typ, await sign({}, { typ })] as const)
    )
  )
}

const seen: Array<unknown> = []
const spy = defineAgent({
  id: "spy",
  name: "Spy",
  purpose: "Records the user its instructions see",
  instructions: ({ user }) => {
    seen.push(user)
    return "Be brief."
  },
  tools: [getWeather, add]
})
const userStep = workflow({
  id: "who",
  name: "Who",
  purpose: "Returns the user",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "user", execute: ({ user }) => ({ user }) })
const app = defineApp({ agents: [spy], tools: [whoami], workflows: [approval, userStep] })

const jwt = (settings: Partial<JwtSettings> = {}): AuthSettings => ({
  production: false,
  jwt: { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [], ...settings }
})

const bearer = (
  token?: string
): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` })

/** One representative route per class. */
const routes = {
  execution: { method: "POST", path: "/tools/add/execute", body: { input: { a: 1, b: 2 } } },
  management: { method: "GET", path: "/agents" },
  documentation: { method: "GET", path: "/doc" },
  discovery: { method: "GET", path: "/agents/spy/card" }
} as const

const call = (
  url: string,
  route: { method: string; path: string; body?: unknown },
  token?: string,
  extra: Record<string, string> = {}
) =>
  fetchJson(`${url}${route.path}`, {
    method: route.method,
    headers: { "content-type": "application/json", ...bearer(token), ...extra },
    ...(route.body === undefined ? {} : { body: JSON.stringify(route.body) })
  })

const statuses = (url: string, token?: string) =>
  Effect.all(
    Object.fromEntries(
      Object.entries(routes).map(([name, route]) => [
        name,
        Effect.map(call(url, route, token), (r) => r.status)
      ])
    )
  )

layer(TestServerLive({ app }), { excludeTestServices: true })("no authentication configured", (it) => {
  it.effect("every route class is public; a token is not needed", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* statuses(url)).toEqual({ execution: 200, management: 200, documentation: 200, discovery: 200 })
      const doc = (yield* fetchJson(`${url}/doc`)).body
      expect(doc.components.securitySchemes ?? {}).toEqual({})
    }))
})

layer(TestServerLive({ app, config: { auth: jwt() } }), { excludeTestServices: true })(
  "JWT, defaultPrivate false",
  (it) => {
    it.effect("execution routes need a token; the others stay public", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        expect(yield* statuses(url)).toEqual({ execution: 401, management: 200, documentation: 200, discovery: 200 })
        expect(yield* statuses(url, tokens.valid)).toEqual({
          execution: 200,
          management: 200,
          documentation: 200,
          discovery: 200
        })
        const missing = yield* call(url, routes.execution)
        expect(missing.body).toEqual({ success: false, error: "Authentication required" })
        for (const path of ["suspend", "resume", "cancel"]) {
          const anonymous = yield* fetchJson(`${url}/workflows/approval/executions/x/${path}`, json({}))
          expect(anonymous.status).toBe(401)
          const authenticated = yield* fetchJson(`${url}/workflows/approval/executions/x/${path}`, {
            ...json({}),
            headers: { "content-type": "application/json", ...bearer(tokens.valid) }
          })
          expect(authenticated.status).toBe(404)
        }
      }))

    it.effect("bad tokens: expired, not yet valid, bad signature, alg none", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const expired = yield* call(url, routes.execution, tokens.expired)
        expect(expired).toMatchObject({ status: 401, body: { success: false, error: "Token expired" } })
        const notYet = yield* call(url, routes.execution, tokens.notYet)
        expect(notYet.status).toBe(401)
        expect(notYet.body.error).toMatch(/^Invalid token: .*nbf/)
        const forged = yield* call(url, routes.execution, tokens.badSignature)
        expect(forged.body.error).toBe("Invalid token: signature verification failed")
        const none = yield* call(url, routes.execution, tokens.none)
        expect(none.status).toBe(401)
        expect(none.body.error).toMatch(/^Invalid token: /)
        const rs = yield* call(url, routes.execution, tokens.rs256)
        expect(rs.status).toBe(401)
        const garbage = yield* call(url, routes.execution, "not.a.jwt")
        expect(garbage.body.error).toMatch(/^Invalid token: /)
      }))

    it.effect("a verified token without a subject (or with an empty one) is refused, not the anonymous owner", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (const token of [tokens.noSubject, tokens.emptySubject]) {
          const executed = yield* fetchJson(`${url}/workflows/who/execute`, {
            method: "POST",
            headers: { "content-type": "application/json", ...bearer(token) },
            body: JSON.stringify({ input: {} })
          })
          expect(executed).toMatchObject({ status: 401, body: { success: false, error: "Invalid token: no subject" } })
          expect((yield* call(url, routes.execution, token)).body.error).toBe("Invalid token: no subject")
        }
      }))

    it.effect("exp is required; iat and nbf may be at most 30 s ahead, exp at most 30 s behind", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const noExp = yield* call(url, routes.execution, tokens.noExp)
        expect(noExp).toMatchObject({ status: 401, body: { error: "Invalid token: missing required \"exp\" claim" } })
        const future = yield* call(url, routes.execution, tokens.issuedInTheFuture)
        expect(future.status).toBe(401)
        expect(future.body.error).toMatch(/^Invalid token: "iat" claim .*in the past/)
        expect((yield* call(url, routes.execution, tokens.issuedWithinSkew)).status).toBe(200)
        expect((yield* call(url, routes.execution, tokens.notBeforeWithinSkew)).status).toBe(200)
        expect((yield* call(url, routes.execution, tokens.expiredWithinSkew)).status).toBe(200)
      }))

    it.effect("authentication is checked before the body; the dev header never bypasses JWT; unknown routes stay 404", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const badBody = yield* fetchJson(`${url}/tools/add/execute`, json([1]))
        expect(badBody.status).toBe(401)
        const dev = yield* call(url, routes.execution, undefined, { "x-service-dev": "true" })
        expect(dev.status).toBe(401)
        expect((yield* fetchJson(`${url}/nowhere`)).status).toBe(404)
      }))

    it.effect("the user reaches tools, agents' dynamic instructions and workflow steps", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const headers = { "content-type": "application/json", ...bearer(tokens.valid) }
        const who = yield* fetchJson(`${url}/tools/whoami/execute`, {
          method: "POST",
          headers,
          body: JSON.stringify({ context: { tier: "gold" } })
        })
        expect(who.body.data.result).toMatchObject({ user: { sub: "ada", role: "admin" }, context: { tier: "gold" } })
        seen.length = 0
        yield* fetchJson(`${url}/agents/spy/text`, { method: "POST", headers, body: JSON.stringify({ input: "hi" }) })
        expect(seen).toEqual([expect.objectContaining({ sub: "ada" })])
        const step = yield* fetchJson(`${url}/workflows/who/execute`, {
          method: "POST",
          headers,
          body: JSON.stringify({ input: {} })
        })
        expect(step.body.data.result).toEqual({ user: expect.objectContaining({ sub: "ada", role: "admin" }) })
      }))

    it.effect("MCP calls need the token too, and run as its user", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const anonymous = yield* fetchJson(
          `${url}/mcp/default/mcp`,
          json({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        )
        expect(anonymous.status).toBe(401)
        const result = yield* Effect.promise(async () => {
          const client = new Client({ name: "auth-test", version: "1.0.0" })
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`), {
              requestInit: { headers: bearer(tokens.valid) }
            })
          )
          const called = await client.callTool({ name: "whoami", arguments: {} })
          await client.close()
          return called
        })
        const text = (result.content as Array<{ type: string; text: string }>)[0].text
        expect(JSON.parse(text).user).toMatchObject({ sub: "ada" })
      }))

    it.effect("/doc marks exactly the execution routes with bearer security", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const doc = (yield* fetchJson(`${url}/doc`)).body
        expect(doc.components.securitySchemes.bearerAuth).toEqual({
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT"
        })
        expect(doc.paths["/tools/{name}/execute"].post.security).toEqual([{ bearerAuth: [] }])
        expect(doc.paths["/workflows/{id}/executions/{executionId}/resume"].post.security).toEqual([{ bearerAuth: [] }])
        expect(doc.paths["/agents"].get.security).toEqual([])
        expect(doc.paths["/doc"].get.security).toEqual([])
      }))
  }
)

layer(TestServerLive({ app, config: { auth: jwt({ defaultPrivate: true }) } }), { excludeTestServices: true })(
  "JWT, defaultPrivate true",
  (it) => {
    it.effect("every class needs a token; unknown routes are still 404", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        expect(yield* statuses(url)).toEqual({ execution: 401, management: 401, documentation: 401, discovery: 401 })
        expect(yield* statuses(url, tokens.valid)).toEqual({
          execution: 200,
          management: 200,
          documentation: 200,
          discovery: 200
        })
        expect((yield* fetchJson(`${url}/ui`)).status).toBe(401)
        expect((yield* fetchJson(`${url}/ui`, { headers: bearer(tokens.valid) })).status).toBe(200)
        expect((yield* fetchJson(`${url}/nowhere`)).status).toBe(404)
        const doc = (yield* fetchJson(`${url}/doc`, { headers: bearer(tokens.valid) })).body
        expect(doc.paths["/agents"].get.security).toEqual([{ bearerAuth: [] }])
      }))
  }
)

layer(
  TestServerLive({
    app,
    config: {
      auth: jwt({ defaultPrivate: true, publicRoutes: ["GET /agents", "POST /tools/:name/execute", "GET /workflows*"] })
    }
  }),
  { excludeTestServices: true }
)("JWT with publicRoutes", (it) => {
  it.effect("patterns with :param and a trailing * open exactly those routes", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* statuses(url)).toEqual({ execution: 200, management: 200, documentation: 401, discovery: 401 })
      expect((yield* fetchJson(`${url}/workflows/approval`)).status).toBe(200)
      expect((yield* fetchJson(`${url}/workflows/executions`)).status).toBe(200)
      expect((yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 1 } }))).status).toBe(401)
      expect((yield* fetchJson(`${url}/agents/spy`)).status).toBe(401)
      const doc = (yield* fetchJson(`${url}/doc`, { headers: bearer(tokens.valid) })).body
      expect(doc.paths["/tools/{name}/execute"].post.security).toEqual([])
    }))
})

layer(
  TestServerLive({ app, config: { auth: jwt({ secret: Redacted.make(RSA_PEM) }) } }),
  { excludeTestServices: true }
)("JWT verified with an RSA public key", (it) => {
  it.effect("RS256 tokens pass; an HS256 token signed with the public key as HMAC secret is refused", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* call(url, routes.execution, tokens.rs256)).status).toBe(200)
      const confused = yield* call(url, routes.execution, tokens.hmacWithPublicKey)
      expect(confused.status).toBe(401)
      expect(confused.body.error).toMatch(/^Invalid token: .*alg/)
      expect((yield* call(url, routes.execution, tokens.valid)).status).toBe(401)
    }))
})

layer(
  TestServerLive({ app, config: { auth: jwt({ audience: "service", issuer: "issuer" }) } }),
  { excludeTestServices: true }
)("JWT with audience and issuer", (it) => {
  it.effect("wrong audience and wrong issuer are refused", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* call(url, routes.execution, tokens.rightAudience)).status).toBe(200)
      const aud = yield* call(url, routes.execution, tokens.wrongAudience)
      expect(aud.body.error).toMatch(/^Invalid token: .*"aud"/)
      const iss = yield* call(url, routes.execution, tokens.wrongIssuer)
      expect(iss.body.error).toMatch(/^Invalid token: .*"iss"/)
      expect((yield* call(url, routes.execution, tokens.valid)).status).toBe(401)
    }))
})

layer(
  TestServerLive({
    app,
    config: { auth: jwt({ mapUser: (claims) => ({ id: claims.sub, admin: claims.role === "admin" }) }) }
  }),
  { excludeTestServices: true }
)("mapUser", (it) => {
  it.effect("builds the user object tools see", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const who = yield* fetchJson(`${url}/tools/whoami/execute`, {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer(tokens.valid) },
        body: "{}"
      })
      expect(who.body.data.result.user).toEqual({ id: "ada", admin: true })
    }))
})

layer(
  TestServerLive({ app, config: { auth: jwt({ allowNoExp: true, clockToleranceSeconds: 0 }) } }),
  { excludeTestServices: true }
)("JWT allowing tokens without exp, with no clock tolerance", (it) => {
  it.effect("a token without exp passes; nothing ahead of the clock does", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* call(url, routes.execution, tokens.noExp)).status).toBe(200)
      // Signed now: the module's tokens may be over 10 s old by this test on a loaded machine.
      const notBeforeWithinSkew = yield* Effect.promise(() => sign({}, { nbf: now() + 10 }))
      const issuedWithinSkew = yield* Effect.promise(() => sign({}, { iat: now() + 10 }))
      expect((yield* call(url, routes.execution, notBeforeWithinSkew)).status).toBe(401)
      expect((yield* call(url, routes.execution, issuedWithinSkew)).status).toBe(401)
      expect((yield* call(url, routes.execution, tokens.expiredWithinSkew)).body.error).toBe("Token expired")
    }))
})

layer(
  TestServerLive({ app, config: { auth: jwt({ mapUser: (claims) => ({ id: claims.email ?? null }) }) } }),
  { excludeTestServices: true }
)("mapUser supplying the user id", (it) => {
  it.effect("a token without sub passes when mapUser gives an id, and is refused when it does not", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const withEmail = yield* Effect.promise(() => sign({ sub: undefined, email: "ada@example.com" }))
      const who = yield* fetchJson(`${url}/tools/whoami/execute`, {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer(withEmail) },
        body: "{}"
      })
      expect(who.status).toBe(200)
      expect(who.body.data.result.user).toEqual({ id: "ada@example.com" })
      expect((yield* call(url, routes.execution, tokens.noSubject)).body.error).toBe("Invalid token: no subject")
    }))
})

describe("console access policy", () => {
  const consoleRequest = (key?: string) => ({
    routeClass: "console" as const,
    method: "GET",
    path: "/observability/status",
    token: Option.none<string>(),
    consoleKey: Option.fromNullable(key)
  })
  const outcome = (settings: AuthSettings, key?: string) =>
    Effect.runPromise(
      Effect.either(
        Effect.flatMap(makeAuthPolicy(settings, "127.0.0.1"), (policy) => policy.authorize(consoleRequest(key)))
      )
    ).then((e) => e._tag === "Right" ? "ok" : e.left.message)

  it("is open outside production, keyed in production, closed in production without a key", async () => {
    expect(await outcome({ production: false })).toBe("ok")
    expect(await outcome({ production: false, jwt: jwt().jwt })).toBe("ok")
    expect(await outcome({ production: true, consoleKey: Redacted.make("k3y") }, "k3y")).toBe("ok")
    expect(await outcome({ production: true, consoleKey: Redacted.make("k3y") })).toBe("Console access key required")
    expect(await outcome({ production: true, consoleKey: Redacted.make("k3y") }, "wrong")).toBe(
      "Invalid console access key"
    )
    expect(await outcome({ production: true }, "anything")).toMatch(/^Console access is disabled/)
  })
})

describe("publicRoutes patterns", () => {
  it("match method, :param segments and a trailing *", () => {
    const isPublic = compilePublicRoutes(["GET /agents/:id", "POST /tools/*", "* /health"])
    expect(isPublic("GET", "/agents/a1")).toBe(true)
    expect(isPublic("GET", "/agents/a1/card")).toBe(false)
    expect(isPublic("POST", "/agents/a1")).toBe(false)
    expect(isPublic("POST", "/tools/add/execute")).toBe(true)
    expect(isPublic("DELETE", "/health")).toBe(true)
  })
})

layer(TestServerLive({ app, config: { auth: jwt() } }), { excludeTestServices: true })(
  "JWT lifetime and typ (issue #42)",
  (it) => {
    it.effect("a token living longer than auth.maxTokenLifetimeSeconds (a day), or without iat, is refused", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const forever = yield* call(url, routes.execution, tokens.year9999)
        expect(forever).toMatchObject({ status: 401, body: { success: false } })
        expect(forever.body.error).toBe(
          "Invalid token: its lifetime (exp - iat) is over auth.maxTokenLifetimeSeconds (86400)"
        )
        expect((yield* call(url, routes.execution, tokens.dayLong)).status).toBe(200)
        expect((yield* call(url, routes.execution, tokens.dayAndASecond)).status).toBe(401)
        const noIat = yield* call(url, routes.execution, tokens.noIat)
        expect(noIat).toMatchObject({ status: 401, body: { error: "Invalid token: missing required \"iat\" claim" } })
      }))

    it.effect("typ: absent, JWT or at+jwt (any case, application/ optional) pass; refresh, ID and other types are refused", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const outcomes: Record<string, number> = {}
        for (const [typ, token] of Object.entries(tokens.typed)) {
          outcomes[typ] = (yield* call(url, routes.execution, token)).status
        }
        expect(outcomes).toEqual({
          "JWT": 200,
          "jwt": 200,
          "at+jwt": 200,
          "application/at+JWT": 200,
          "APPLICATION/jwt": 200,
          "refresh+jwt": 401,
          "id_token+jwt": 401,
          "application/refresh+jwt": 401,
          "JOSE": 401
        })
        expect((yield* call(url, routes.execution, tokens.valid)).status).toBe(200)
        const refresh = yield* call(url, routes.execution, tokens.typed["refresh+jwt"])
        expect(refresh.body).toEqual({
          success: false,
          error: "Invalid token: its type (typ) is not one auth.allowedTypes accepts"
        })
      }))
  }
)

layer(
  TestServerLive({
    app,
    config: { auth: jwt({ allowedTypes: ["at+jwt"], requireType: true, maxTokenLifetimeSeconds: 3600 }) }
  }),
  { excludeTestServices: true }
)("JWT with configured types and lifetime", (it) => {
  it.effect("only the configured types pass, a token without typ is refused, and the lifetime bound is the configured one", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* call(url, routes.execution, tokens.typed["application/at+JWT"])).status).toBe(200)
      expect((yield* call(url, routes.execution, tokens.typed["JWT"])).status).toBe(401)
      expect((yield* call(url, routes.execution, tokens.valid)).status).toBe(401)
      const long = yield* Effect.promise(() => sign({}, { typ: "at+jwt", exp: now() + 3601 }))
      expect((yield* call(url, routes.execution, long)).body.error).toMatch(/auth\.maxTokenLifetimeSeconds \(3600\)/)
    }))
})

layer(
  TestServerLive({ app, config: { auth: jwt({ allowNoExp: true }) } }),
  { excludeTestServices: true }
)("JWT allowing tokens without exp, bounded by age", (it) => {
  it.effect("a token without exp needs an iat no older than auth.maxTokenLifetimeSeconds", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* call(url, routes.execution, tokens.noExp)).status).toBe(200)
      expect((yield* call(url, routes.execution, tokens.noExpOldIat)).status).toBe(401)
      expect((yield* call(url, routes.execution, tokens.noExpNoIat)).status).toBe(401)
      expect((yield* call(url, routes.execution, tokens.year9999)).status).toBe(401)
    }))
})
