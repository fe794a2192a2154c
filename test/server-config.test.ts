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

  it("JWT: exp is required unless auth.allowNoExp or JWT_ALLOW_NO_EXP; the clock tolerance comes from verifyOptions", () => {
    const secret = { JWT_SECRET: secrets.JWT_SECRET }
    expect(resolveServerConfig({}, secret).auth.jwt).toMatchObject({ allowNoExp: false, clockToleranceSeconds: undefined })
    expect(resolveServerConfig({}, { ...secret, JWT_ALLOW_NO_EXP: "true" }).auth.jwt?.allowNoExp).toBe(true)
    const file = { auth: { allowNoExp: true, verifyOptions: { clockToleranceSeconds: 5 } } }
    expect(resolveServerConfig(file, secret).auth.jwt).toMatchObject({ allowNoExp: true, clockToleranceSeconds: 5 })
    expect(resolveServerConfig(file, { ...secret, JWT_ALLOW_NO_EXP: "false" }).auth.jwt?.allowNoExp).toBe(false)
    expect(() => resolveServerConfig({}, { ...secret, JWT_ALLOW_NO_EXP: "yes" })).toThrow(/JWT_ALLOW_NO_EXP: must be true or false/)
  })
})
