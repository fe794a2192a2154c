import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { embeddingSteps, installProject, prefetchMarker } from "../scripts/embedding-steps.mjs"
import { expected, fixtureFiles, FIXTURES, OK_FIXTURES, ROOT } from "./support/typeFixtures.js"

// Issue #30 (settled 13): the mistake fixtures give the same diagnostics under the newest TypeScript a
// user installs (7.x, the native compiler, which has no stable JS compiler API: its `tsc` is run on all
// fixtures at once and its `file(line,col): error TSxxxx: message` lines read). That TypeScript is the
// one the README's `npm install --save-dev typescript ...` line resolves, run as written and offline from
// the npm cache that `node scripts/embedding-steps.mjs --prefetch` (CI's set-up) filled, as
// test/embedding-pack.test.ts does: nothing downloads here. The fixtures keep importing the repo's src:
// a tsconfig in a temporary folder extends the repo's and lists them.

const README = readFileSync(join(ROOT, "README.md"), "utf8")
const STEPS = embeddingSteps(README)
const CI = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "0" && process.env.CI !== "false"
const run = promisify(execFile)

interface Diagnostic {
  readonly code: number
  readonly message: string
}

/** `tsc --pretty false` output: a `file(line,col): error TSn: text` line, then its chain indented below. */
const parseTscOutput = (output: string, cwd: string) => {
  const byFile = new Map<string, Array<Diagnostic>>()
  const global: Array<string> = []
  let last: { message: string } | undefined
  for (const line of output.split(/\r?\n/)) {
    const located = /^(.+)\((\d+),(\d+)\): error TS(\d+): (.*)$/.exec(line)
    if (located !== null) {
      const diagnostic = { code: Number(located[4]), message: located[5]! }
      const file = resolve(cwd, located[1]!)
      byFile.set(file, [...(byFile.get(file) ?? []), diagnostic])
      last = diagnostic
    } else if (/^\s/.test(line) && last !== undefined && line.trim() !== "") {
      last.message += `\n${line}`
    } else if (line.trim() !== "") {
      global.push(line)
      last = undefined
    }
  }
  return { byFile, global }
}

/** The README's install line of TypeScript (`npm install --save-dev typescript ...`, unpinned): what a reader runs. */
const typescriptInstall = () => {
  const lines = STEPS.install.filter((line) => line.split(/\s+/).includes("typescript"))
  if (lines.length !== 1) {
    throw new Error(
      `the README's install steps should install typescript on one line: ${JSON.stringify(STEPS.install)}`
    )
  }
  return lines
}

describe("the typed workflow builder's compile errors under the newest TypeScript (7.x)", () => {
  let skipped = false
  let version = ""
  let dir = ""
  let diagnostics = new Map<string, Array<Diagnostic>>()
  let global: Array<string> = []

  beforeAll(async () => {
    if (!existsSync(await prefetchMarker(STEPS))) {
      const fill = "scripts/node-line 24 node scripts/embedding-steps.mjs --prefetch"
      if (CI) {
        throw new Error(
          `npm's cache was not filled for the README's embedding steps: .ci/run's set-up does it (${fill}); tests never download`
        )
      }
      console.warn(
        `skipped: npm's cache was not filled for the README's embedding steps; fill it once with \`${fill}\` (this test never downloads)`
      )
      skipped = true
      return
    }
    dir = mkdtempSync(join(tmpdir(), "type-fixtures-ts7-"))
    // No package name to replace by a tarball in that line: `name` matches no word of it.
    await installProject(dir, {
      files: { "package.json": "{ \"private\": true }\n" },
      install: typescriptInstall(),
      run: []
    }, {
      name: "-",
      tarball: "-",
      offline: true
    })
    const typescript = join(dir, "node_modules", "typescript")
    version = JSON.parse(readFileSync(join(typescript, "package.json"), "utf8")).version
    console.info(`type fixtures: TypeScript ${version}`)
    const files = [...fixtureFiles(FIXTURES), ...fixtureFiles(OK_FIXTURES)]
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        extends: join(ROOT, "tsconfig.json"),
        // The repo's options (strict and the rest) with the fixtures' own root; `types: ["node"]` looks in
        // the repo's node_modules, as it does there.
        compilerOptions: { noEmit: true, rootDir: ROOT, typeRoots: [join(ROOT, "node_modules", "@types")] },
        include: [],
        files
      })
    )
    const output = await run(process.execPath, [
      join(typescript, "bin", "tsc"),
      "-p",
      "tsconfig.json",
      "--pretty",
      "false"
    ], {
      cwd: dir,
      timeout: 240_000,
      maxBuffer: 64 * 1024 * 1024
    }).then(({ stdout, stderr }) => stdout + stderr, (error) => `${error.stdout ?? ""}${error.stderr ?? ""}`)
    const parsed = parseTscOutput(output, dir)
    diagnostics = parsed.byFile
    global = parsed.global
  }, 300_000)

  afterAll(() => {
    if (dir !== "") rmSync(dir, { recursive: true, force: true })
  })

  it("is TypeScript 7 or newer, and reports nothing outside the fixtures", (context) => {
    if (skipped) return context.skip()
    expect(Number(version.split(".")[0]), `TypeScript ${version}`).toBeGreaterThanOrEqual(7)
    expect(global).toEqual([])
    const fixtures = new Set([...fixtureFiles(FIXTURES), ...fixtureFiles(OK_FIXTURES)])
    expect([...diagnostics.keys()].filter((file) => !fixtures.has(file))).toEqual([])
  })

  it("every fixture is listed in test/support/typeFixtures.ts, and every listed one exists", () => {
    expect(fixtureFiles(FIXTURES).map((file) => file.slice(FIXTURES.length + 1))).toEqual(Object.keys(expected).sort())
  })

  for (const [file, { code, names, firstLine, ts7 }] of Object.entries(expected)) {
    it(`${file}: TS${code} naming ${(ts7?.names ?? names).join(", ")}`, (context) => {
      if (skipped) return context.skip()
      const found = diagnostics.get(join(FIXTURES, file)) ?? []
      expect(
        found.map((diagnostic) => diagnostic.code),
        `TypeScript ${version}: ${found.map((d) => d.message).join("\n")}`
      ).toEqual([code])
      for (const name of ts7?.names ?? names) expect(found[0]!.message).toContain(name)
      for (const name of firstLine ?? []) expect(found[0]!.message.split("\n")[0]).toContain(name)
    })
  }

  it("test/type-fixtures-ok compiles with no diagnostic (no TS2589 on a 60-step workflow or a 20-workflow app)", (context) => {
    if (skipped) return context.skip()
    const files = fixtureFiles(OK_FIXTURES)
    expect(files.length).toBeGreaterThan(0)
    for (const file of files) expect(diagnostics.get(file) ?? [], file).toEqual([])
  })
})
