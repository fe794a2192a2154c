import { readdirSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

// Issue #30 (settled 13): each mistake the typed builder catches is a fixture under test/type-fixtures
// (left out of tsconfig.json), compiled here with the repo's compiler options in one program. A test
// asserts the diagnostic's code and that its message names the field: an `@ts-expect-error` would pass
// on any error, a typo in the test included.

const root = join(import.meta.dirname, "..")
const dir = join(root, "test/type-fixtures")

/** Each fixture: the one diagnostic it must give (code, and what its message names). */
const expected: Record<string, { readonly code: number; readonly names: ReadonlyArray<string> }> = {
  "data-field.ts": { code: 2551, names: ["'greting'", "{ greeting: string; }"] },
  "input-field.ts": { code: 2339, names: ["'nmae'", "readonly name: string"] },
  "steps-field.ts": { code: 2551, names: ["'totl'", "total: number"] },
  "steps-id.ts": { code: 2551, names: ["'load-tiket'", "\"load-ticket\""] },
  "resume-field.ts": { code: 2551, names: ["'aproved'", "readonly approved: boolean"] },
  "suspend-data.ts": { code: 2561, names: ["'amout'", "readonly amount: number"] },
  "suspend-missing.ts": { code: 2554, names: ["Expected 2 arguments, but got 1"] },
  "child-input.ts": { code: 2769, names: ["'ticketId' is missing", "readonly name: string"] },
  "child-input-mapped.ts": { code: 2769, names: ["'{ ticket: string; }'", "readonly ticketId: string"] },
  "child-result.ts": { code: 2339, names: ["'name'", "{ readonly ok: boolean; }"] },
  "result-mismatch.ts": { code: 2739, names: ["LastDataDoesNotFitResult<{ greting: string; }, { readonly greeting: string; }"] },
  "all-tuple.ts": { code: 2493, names: ["'[string, number]'", "index '2'"] },
  "all-inner-type.ts": { code: 2339, names: ["'toUpperCase'", "type 'number'"] },
  "when-union.ts": { code: 2339, names: ["'doubled'"] },
  "when-inner-undefined.ts": { code: 18048, names: ["'steps.double' is possibly 'undefined'"] },
  "race-union.ts": { code: 2339, names: ["'ms'", "{ winner: string; }"] },
  "tap-unchanged.ts": { code: 2339, names: ["'audited'"] },
  "agent-text.ts": { code: 2339, names: ["'answer'", "type 'string'"] },
  "agent-output-field.ts": { code: 2551, names: ["'answr'", "{ readonly answer: string; }"] },
  "agent-map-field.ts": { code: 2551, names: ["'sumary'", "{ ticketId: string; summary: string; }"] },
  "unprovided-service.ts": { code: 2345, names: ["Type 'Tickets' is not assignable to type 'never'"] },
  "unprovided-step-service.ts": { code: 2345, names: ["Type 'Tickets' is not assignable to type 'never'"] },
  "agent-tool-service.ts": { code: 2345, names: ["Type 'Billing' is not assignable to type 'never'"] },
  "agent-step-service.ts": { code: 2345, names: ["Type 'Billing' is not assignable to type 'never'"] },
  "registered-by-hand.ts": { code: 2322, names: ["Type 'Tickets' is not assignable to type 'never'", "WorkflowDefinition<any, any, never>"] },
  // The typed WorkflowEngine calls (valid counterparts: test/types/typed-calls.ts).
  "typed-execute-input.ts": { code: 2353, names: ["'nmae'", "{ readonly name: string; }"] },
  "typed-result-field.ts": { code: 2551, names: ["'greting'", "{ readonly greeting: string; }"] },
  "typed-resume-field.ts": { code: 2561, names: ["'aproved'", "{ readonly approved: boolean; }"] }
}

const compile = () => {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  const files = readdirSync(dir).filter((file) => file.endsWith(".ts")).map((file) => join(dir, file))
  const program = ts.createProgram(files, { ...config.options, noEmit: true })
  return new Map(files.map((file) => [
    file.slice(dir.length + 1),
    ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((diagnostic) => ({
      code: diagnostic.code,
      message: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
    }))
  ]))
}

describe("the typed workflow builder's compile errors", () => {
  const diagnostics = compile()

  it("every fixture is listed here, and every listed one exists", () => {
    expect([...diagnostics.keys()].sort()).toEqual(Object.keys(expected).sort())
  })

  for (const [file, { code, names }] of Object.entries(expected)) {
    it(`${file}: TS${code} naming ${names.join(", ")}`, () => {
      const found = diagnostics.get(file) ?? []
      expect(found.map((diagnostic) => diagnostic.code)).toEqual([code])
      for (const name of names) expect(found[0].message).toContain(name)
    })
  }
})
