import { describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import { inspect } from "node:util"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { storageKind } from "../src/storage/Sql.js"

const secrets = {
  DATABASE_URL: "postgres://ann:pg-password-secret@db.internal:5432/service",
  JWT_SECRET: "jwt-secret-0123456789-0123456789-xx",
  SERVICE_CONSOLE_ACCESS_KEY: "console-key-secret",
  AI_PROVIDER: "openai",
  AI_API_KEY: "sk-model-secret"
}
const secretTexts = ["pg-password-secret", secrets.JWT_SECRET, "console-key-secret", "sk-model-secret"]

describe("the server configuration", () => {
  it("holds every secret redacted: serialising, printing or inspecting it never shows one", () => {
    const config = resolveServerConfig({}, secrets)
    for (const shown of [JSON.stringify(config), String(config.databaseUrl), inspect(config, { depth: 10 })]) {
      for (const secret of secretTexts) expect(shown).not.toContain(secret)
    }
    expect(Redacted.value(config.databaseUrl)).toBe(secrets.DATABASE_URL)
    expect(storageKind(config.databaseUrl)).toBe("postgres")
  })

  it("takes the database URL from DATABASE_URL over the config file, and defaults to SQLite", () => {
    const fromFile = resolveServerConfig({ storage: { url: "file:/tmp/from-file.db" } }, {})
    expect(Redacted.value(fromFile.databaseUrl)).toBe("file:/tmp/from-file.db")
    const fromEnv = resolveServerConfig({ storage: { url: "file:/tmp/from-file.db" } }, {
      DATABASE_URL: "file:/tmp/env.db"
    })
    expect(Redacted.value(fromEnv.databaseUrl)).toBe("file:/tmp/env.db")
    expect(Redacted.value(resolveServerConfig({}, {}).databaseUrl)).toBe("file:./.data/service.db")
  })

  it("takes the provider options callers may set from PROVIDER_OPTIONS_ALLOW over the config file; none by default", () => {
    expect(resolveServerConfig({}, {}).providerOptionsAllow).toEqual([])
    const file = { agents: { providerOptionsAllow: ["anthropic.thinking"] } }
    expect(resolveServerConfig(file, {}).providerOptionsAllow).toEqual(["anthropic.thinking"])
    expect(
      resolveServerConfig(file, { PROVIDER_OPTIONS_ALLOW: "openai.reasoningEffort, openai-compatible.user" })
        .providerOptionsAllow
    )
      .toEqual(["openai.reasoningEffort", "openai-compatible.user"])
    expect(() => resolveServerConfig({}, { PROVIDER_OPTIONS_ALLOW: "openai" })).toThrow(
      /PROVIDER_OPTIONS_ALLOW: each entry must be provider\.key \(e\.g\. openai\.reasoningEffort\), got "openai"/
    )
  })

  it("JWT: exp is required unless auth.allowNoExp or JWT_ALLOW_NO_EXP; the clock tolerance comes from verifyOptions", () => {
    const secret = { JWT_SECRET: secrets.JWT_SECRET }
    expect(resolveServerConfig({}, secret).auth.jwt).toMatchObject({
      allowNoExp: false,
      clockToleranceSeconds: undefined
    })
    expect(resolveServerConfig({}, { ...secret, JWT_ALLOW_NO_EXP: "true" }).auth.jwt?.allowNoExp).toBe(true)
    const file = { auth: { allowNoExp: true, verifyOptions: { clockToleranceSeconds: 5 } } }
    expect(resolveServerConfig(file, secret).auth.jwt).toMatchObject({ allowNoExp: true, clockToleranceSeconds: 5 })
    expect(resolveServerConfig(file, { ...secret, JWT_ALLOW_NO_EXP: "false" }).auth.jwt?.allowNoExp).toBe(false)
    expect(() => resolveServerConfig({}, { ...secret, JWT_ALLOW_NO_EXP: "yes" })).toThrow(
      /JWT_ALLOW_NO_EXP: must be true or false/
    )
  })

  it("JWT lifetime and types come from auth.maxTokenLifetimeSeconds, allowedTypes and requireType (the verifier's defaults otherwise)", () => {
    const secret = { JWT_SECRET: secrets.JWT_SECRET }
    expect(resolveServerConfig({}, secret).auth.jwt).toMatchObject({
      maxTokenLifetimeSeconds: undefined,
      allowedTypes: undefined,
      requireType: undefined
    })
    const file = { auth: { maxTokenLifetimeSeconds: 600, allowedTypes: ["at+jwt"], requireType: true } }
    expect(resolveServerConfig(file, secret).auth.jwt).toMatchObject(file.auth)
  })

  it("HTTP bounds: 10 s for headers, 60 s for a request, 256 connections per client; the file and HTTP_* variables change them", () => {
    expect(resolveServerConfig({}, {}).http).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 60_000,
      maxConnectionsPerClient: 256
    })
    const file = { http: { headersTimeoutSeconds: 2, requestTimeoutSeconds: 5, maxConnectionsPerClient: 0 } }
    expect(resolveServerConfig(file, {}).http).toEqual({
      headersTimeoutMs: 2_000,
      requestTimeoutMs: 5_000,
      maxConnectionsPerClient: 0
    })
    const env = {
      HTTP_HEADERS_TIMEOUT_SECONDS: "0.5",
      HTTP_REQUEST_TIMEOUT_SECONDS: "30",
      HTTP_MAX_CONNECTIONS_PER_CLIENT: "16"
    }
    expect(resolveServerConfig(file, env).http).toEqual({
      headersTimeoutMs: 500,
      requestTimeoutMs: 30_000,
      maxConnectionsPerClient: 16
    })
    expect(() => resolveServerConfig({}, { HTTP_MAX_CONNECTIONS_PER_CLIENT: "-1" })).toThrow(
      /HTTP_MAX_CONNECTIONS_PER_CLIENT/
    )
  })

  it("workflow bounds (issue #42): 32 MiB an execution stores, 30 s an execute holds a parked one; the file and the variables change them", () => {
    expect(resolveServerConfig({}, {}).workflows).toMatchObject({
      maxExecutionBytes: 32 * 1024 * 1024,
      executeWaitMs: 30_000
    })
    const file = { workflows: { maxExecutionBytes: 1_000_000, executeWaitSeconds: 5 } }
    expect(resolveServerConfig(file, {}).workflows).toMatchObject({
      maxExecutionBytes: 1_000_000,
      executeWaitMs: 5_000
    })
    const env = { WORKFLOW_MAX_EXECUTION_BYTES: "2048", EXECUTE_WAIT_SECONDS: "0" }
    expect(resolveServerConfig(file, env).workflows).toMatchObject({ maxExecutionBytes: 2048, executeWaitMs: 0 })
    expect(() => resolveServerConfig({}, { WORKFLOW_MAX_EXECUTION_BYTES: "1.5" })).toThrow(
      /WORKFLOW_MAX_EXECUTION_BYTES/
    )
    expect(() => resolveServerConfig({}, { EXECUTE_WAIT_SECONDS: "-1" })).toThrow(/EXECUTE_WAIT_SECONDS/)
  })

  it("the public URL is an http or https URL", () => {
    expect(resolveServerConfig({}, {}).publicUrl).toBeUndefined()
    expect(resolveServerConfig({ publicUrl: "https://agents.example.com" }, {}).publicUrl).toBe(
      "https://agents.example.com"
    )
    expect(resolveServerConfig({}, { SERVICE_PUBLIC_URL: "http://10.0.0.5:3141" }).publicUrl).toBe(
      "http://10.0.0.5:3141"
    )
    expect(() => resolveServerConfig({}, { SERVICE_PUBLIC_URL: "javascript://evil.example/" })).toThrow(
      /SERVICE_PUBLIC_URL: must be an http or https URL/
    )
  })
})
