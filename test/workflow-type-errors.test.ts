import { join } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { expected, fixtureFiles, FIXTURES, OK_FIXTURES, ROOT } from "./support/typeFixtures.js"

// Issue #30 (settled 13): each mistake the typed builder catches is a fixture under test/type-fixtures
// (left out of tsconfig.json), compiled here with the repo's compiler options in one program. A test
// asserts the diagnostic's code and that its message names the field: an `@ts-expect-error` would pass
// on any error, a typo in the test included. The table is test/support/typeFixtures.ts's, which
// test/workflow-type-errors-ts7.test.ts checks under TypeScript 7 too. The files of test/type-fixtures-ok
// (settled 14: a 60-step workflow and a 20-workflow app) must give no diagnostic, TS2589 included.
// The same program is npm test's typecheck (issue #43): tsconfig.json's files (`npm run typecheck`'s) are
// its other roots and must give no diagnostic at all. One program checks src's types once for both (39 s
// of CPU here against 35 s for the typecheck and 23 s for the fixtures apart), and it runs beside the
// tests that wait on sockets instead of before all of them.

const compile = () => {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  const files = [...fixtureFiles(FIXTURES), ...fixtureFiles(OK_FIXTURES)]
  const program = ts.createProgram([...config.fileNames, ...files], { ...config.options, noEmit: true })
  const fixtures = new Map(files.map((file) => [
    file.slice(ROOT.length + 1),
    ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((diagnostic) => ({
      code: diagnostic.code,
      message: ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
    }))
  ]))
  // What `tsc -p tsconfig.json --noEmit` reports: the options' and global diagnostics, then each file's.
  const mistakes = new Set(files)
  const typecheck = [
    ...config.errors,
    ...ts.getPreEmitDiagnostics(program).filter((diagnostic) => !mistakes.has(diagnostic.file?.fileName ?? ""))
  ]
  const formatted = ts.formatDiagnostics(typecheck, {
    getCanonicalFileName: (file) => file,
    getCurrentDirectory: () => ROOT,
    getNewLine: () => "\n"
  })
  return { fixtures, typecheck: { files: config.fileNames.length, formatted } }
}

const compiled = compile()

describe("npm test's typecheck", () => {
  const { typecheck } = compiled

  it("tsconfig.json's files (npm run typecheck's program) compile with no diagnostic", () => {
    expect(typecheck.files).toBeGreaterThan(100)
    expect(typecheck.formatted).toBe("")
  })
})

describe("the typed workflow builder's compile errors", () => {
  const diagnostics = compiled.fixtures

  it("every fixture is listed in test/support/typeFixtures.ts, and every listed one exists", () => {
    expect(fixtureFiles(FIXTURES).map((file) => file.slice(FIXTURES.length + 1))).toEqual(Object.keys(expected).sort())
  })

  for (const [file, { code, names, firstLine }] of Object.entries(expected)) {
    it(`${file}: TS${code} naming ${names.join(", ")}`, () => {
      const found = diagnostics.get(`test/type-fixtures/${file}`) ?? []
      expect(found.map((diagnostic) => diagnostic.code)).toEqual([code])
      for (const name of names) expect(found[0].message).toContain(name)
      for (const name of firstLine ?? []) expect(found[0].message.split("\n")[0]).toContain(name)
    })
  }

  it("test/type-fixtures-ok compiles with no diagnostic (no TS2589 on a 60-step workflow or a 20-workflow app)", () => {
    const ok = [...diagnostics].filter(([file]) => file.startsWith("test/type-fixtures-ok/"))
    expect(ok.length).toBeGreaterThan(0)
    for (const [file, found] of ok) expect(found, file).toEqual([])
  })
})
