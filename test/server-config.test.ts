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
    const fromEnv = resolveServerConfig({ storage: { url: "file:/tmp/from-file.db" } }, { DATABASE_URL: "file:/tmp/env.db" })
    expect(Redacted.value(fromEnv.databaseUrl)).toBe("file:/tmp/env.db")
    expect(Redacted.value(resolveServerConfig({}, {}).databaseUrl)).toBe("file:./.data/service.db")
  })

  it("takes the provider options callers may set from PROVIDER_OPTIONS_ALLOW over the config file; none by default", () => {
    expect(resolveServerConfig({}, {}).providerOptionsAllow).toEqual([])
    const file = { agents: { providerOptionsAllow: ["anthropic.thinking"] } }
    expect(resolveServerConfig(file, {}).providerOptionsAllow).toEqual(["anthropic.thinking"])
    expect(resolveServerConfig(file, { PROVIDER_OPTIONS_ALLOW: "openai.reasoningEffort, openai-compatible.user" }).providerOptionsAllow)
      .toEqual(["openai.reasoningEffort", "openai-compatible.user"])
    expect(() => resolveServerConfig({}, { PROVIDER_OPTIONS_ALLOW: "openai" })).toThrow(
      /PROVIDER_OPTIONS_ALLOW: each entry must be provider\.key \(e\.g\. openai\.reasoningEffort\), got "openai"/
    )
  })
})
