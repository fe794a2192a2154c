import { afterAll, describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseEnv } from "node:util"
import { envValueProblem, setEnvValues } from "../src/ops/EnvFile.js"

const root = mkdtempSync(join(tmpdir(), "env-file-test-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** dotenv 16's parser, as it documents its rules (its LINE expression and quote handling). */
const dotenvParse = (src: string): Record<string, string> => {
  const LINE =
    /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/mg
  const out: Record<string, string> = {}
  const lines = src.replace(/\r\n?/mg, "\n")
  let match: RegExpExecArray | null
  while ((match = LINE.exec(lines)) !== null) {
    let value = (match[2] ?? "").trim()
    const quote = value[0]
    value = value.replace(/^(['"`])([\s\S]*)\1$/mg, "$2")
    if (quote === "\"") value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r")
    out[match[1]] = value
  }
  return out
}

describe("env file values round-trip", () => {
  const tricky = [
    "a'b\"c`d",
    "it's",
    "say \"hi\"",
    "back`tick",
    "s3cret #hash",
    " padded ",
    "a\\nb",
    "$HOME",
    "é=ü",
    "'quoted'"
  ]

  it("every value written is read back unchanged by Node's reader and dotenv's, or refused", () => {
    const unit = fc.constantFrom("a", "Z", "0", " ", "\t", "'", "\"", "`", "#", "\\", "n", "r", "$", "=", "é", ":", "-")
    fc.assert(
      fc.property(fc.stringOf(unit, { minLength: 1, maxLength: 12 }), (value) => {
        if (envValueProblem(value) !== undefined) return
        const text = setEnvValues("OTHER=1\n", [["KEY", value]])
        expect(parseEnv(text)).toEqual({ OTHER: "1", KEY: value })
        expect(dotenvParse(text)).toEqual({ OTHER: "1", KEY: value })
      }),
      { numRuns: 2000 }
    )
    for (const value of tricky) expect(envValueProblem(value), value).toBeUndefined()
  })

  it("process.loadEnvFile reads the values written", () => {
    const file = join(root, "roundtrip.env")
    writeFileSync(file, setEnvValues("", tricky.map((value, i) => [`ROUNDTRIP_${i}`, value] as const)))
    process.loadEnvFile(file)
    expect(tricky.map((_, i) => process.env[`ROUNDTRIP_${i}`])).toEqual(tricky)
    tricky.forEach((_, i) => delete process.env[`ROUNDTRIP_${i}`])
  })

  it("values no reader keeps are refused: NUL, newlines, and all three quotes where quoting is needed", () => {
    expect(envValueProblem("a\u0000b")).toBe("must not contain a NUL character")
    expect(envValueProblem("a\nb")).toBe("must not contain a newline")
    expect(envValueProblem("'a\"b`c")).toMatch(/^cannot be written to \.env unchanged/)
    expect(envValueProblem("a'b\"c`d #x")).toMatch(/^cannot be written to \.env unchanged/)
  })
})
