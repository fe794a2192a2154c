import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import { makeModel, modelName } from "../src/agents/models/providerModel.js"
import { resolveModelSettings } from "../src/config/ModelSettings.js"

describe("model settings from the environment", () => {
  it("defaults to the built-in model", () => {
    const settings = Either.getOrThrow(resolveModelSettings({}))
    expect(settings).toMatchObject({ provider: "builtin", model: "echo" })
    expect(modelName(Effect.runSync(makeModel(settings)))).toBe("builtin/echo")
  })

  it("detects the provider from AI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY", () => {
    expect(Either.getOrThrow(resolveModelSettings({ AI_BASE_URL: "http://h/v1", AI_MODEL: "llama3" }))).toMatchObject({
      provider: "openai-compatible",
      model: "llama3",
      baseUrl: "http://h/v1"
    })
    const key = (env: Record<string, string>) => Redacted.value(Either.getOrThrow(resolveModelSettings(env)).apiKey!)
    expect(Either.getOrThrow(resolveModelSettings({ OPENAI_API_KEY: "sk" }))).toMatchObject({
      provider: "openai",
      model: "gpt-4o-mini"
    })
    expect(key({ OPENAI_API_KEY: "sk" })).toBe("sk")
    expect(Either.getOrThrow(resolveModelSettings({ ANTHROPIC_API_KEY: "ak" }))).toMatchObject({
      provider: "anthropic"
    })
    expect(key({ ANTHROPIC_API_KEY: "ak" })).toBe("ak")
    expect(key({ AI_PROVIDER: "openai", AI_API_KEY: "k", OPENAI_API_KEY: "o" })).toBe("k")
  })

  it("keeps the key redacted: printing or serialising the settings never shows it", () => {
    const settings = Either.getOrThrow(resolveModelSettings({ AI_PROVIDER: "openai", AI_API_KEY: "sk-live-secret" }))
    expect(JSON.stringify(settings)).not.toContain("sk-live-secret")
    expect(String(settings.apiKey)).not.toContain("sk-live-secret")
    expect(JSON.stringify(settings)).toContain("redacted")
  })

  it("says which variable is wrong", () => {
    expect(resolveModelSettings({ AI_PROVIDER: "skynet" })).toEqual(
      Either.left("AI_PROVIDER: must be one of builtin, openai, anthropic, openai-compatible, got \"skynet\"")
    )
    expect(Either.getLeft(resolveModelSettings({ AI_PROVIDER: "openai-compatible" })).pipe((o) => o._tag)).toBe("Some")
    expect(resolveModelSettings({ AI_PROVIDER: "openai" })).toEqual(
      Either.left("AI_API_KEY: required with AI_PROVIDER=openai")
    )
  })

  it("builds each provider's model without a network call", async () => {
    for (
      const env of [{ OPENAI_API_KEY: "x" }, { ANTHROPIC_API_KEY: "x" }, { AI_BASE_URL: "http://h/v1", AI_MODEL: "m" }]
    ) {
      const model = await Effect.runPromise(makeModel(Either.getOrThrow(resolveModelSettings(env))))
      expect(model.specificationVersion).toBe("v4")
    }
  })
})
