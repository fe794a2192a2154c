import { readFileSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"
import { expect, it } from "vitest"

// `npm run typecheck` is `tsc -p tsconfig.json --noEmit`; npm test checks the same program of tsconfig.json's
// files (test/workflow-type-errors.test.ts, with the type fixtures, since issue #43). tsconfig.scripts.json
// (what `npm run bench` and friends compile to .build/) checks a subset of the same files with the same
// options, so the typecheck covers the scripts without a second compile (about 20 s of CPU here). This
// keeps it so: a script left out of tsconfig.json would go unchecked until someone runs a benchmark.

const ROOT = join(import.meta.dirname, "..")
const filesOf = (project: string) => {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, project), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })!
  return { files: parsed.fileNames, options: parsed.options }
}

it("npm run typecheck compiles tsconfig.json, whose files include every file of tsconfig.scripts.json, under the same checks", () => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  expect(scripts.typecheck).toContain("tsc -p tsconfig.json --noEmit")
  const main = filesOf("tsconfig.json")
  const own = filesOf("tsconfig.scripts.json")
  expect(own.files.length).toBeGreaterThan(0)
  expect(own.files.filter((file) => !main.files.includes(file))).toEqual([])
  // The options that decide what is an error are tsconfig.json's (tsconfig.scripts.json extends it and
  // changes only where it writes).
  const { outDir: _a, declaration: _b, configFilePath: _c, ...checks } = own.options
  const { outDir: _d, declaration: _e, configFilePath: _f, ...mainChecks } = main.options
  expect(checks).toEqual(mainChecks)
})
