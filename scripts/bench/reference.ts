/**
 * The reference build `--against` compares with: the commit checked out in its own worktree under
 * .bench/ref-<sha>, installed and built there with the bench's own Node, once per commit. Only its dist/
 * and node_modules are used; the harness, the fake model and the rows stay the working tree's.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { readReference } from "./against.js"
import { REPO_ROOT } from "./processes.js"

const REFERENCE_FILE = join(REPO_ROOT, "docs", "benchmarks.md")

/** The commit docs/benchmarks.md names on its `bench-reference:` line. */
export const defaultReference = (): string => {
  const reference = readReference(readFileSync(REFERENCE_FILE, "utf8"))
  if (reference === undefined) throw new Error(`no "bench-reference: <sha>" line in ${REFERENCE_FILE}`)
  return reference
}

/** The full sha of a commit-ish; a clear error when it names no commit. */
export const resolveCommit = (ref: string): string => {
  try {
    return execFileSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    }).trim()
  } catch {
    throw new Error(`--against: "${ref}" names no commit in this repository`)
  }
}

// A build made under another Node ABI is redone: a native addon compiled by its `npm ci` would not load.
const builtMarker = () => `node ${process.version} modules ${process.versions.modules}\n`

const run = (command: string, args: ReadonlyArray<string>, cwd: string): Promise<void> =>
  new Promise((resolve, reject) => {
    // The bench's own Node first on PATH: the npm scripts refuse an unsupported line, and the addon must match it.
    const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` }
    // Its output goes to stderr: stdout is the bench's report.
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", 2, 2] })
    child.once("error", reject)
    child.once("exit", (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(" ")} in ${cwd} failed (${signal ?? `exit code ${code}`})`)))
  })

/**
 * The reference's dist/main.js: the worktree .bench/ref-<sha> added, `npm ci` and `npm run build` run in
 * it, unless an earlier invocation finished that with this Node's ABI (its .bench-built marker).
 */
export const referenceBuild = async (sha: string, log: (message: string) => void): Promise<string> => {
  const directory = join(REPO_ROOT, ".bench", `ref-${sha}`)
  const main = join(directory, "dist", "main.js")
  const marker = join(directory, ".bench-built")
  if (existsSync(main) && existsSync(marker) && readFileSync(marker, "utf8") === builtMarker()) {
    log(`reference ${sha.slice(0, 12)}: built already in ${directory}`)
    return main
  }
  if (!existsSync(directory)) {
    log(`reference ${sha.slice(0, 12)}: git worktree add ${directory}`)
    await run("git", ["worktree", "add", "--detach", directory, sha], REPO_ROOT)
  }
  log(`reference ${sha.slice(0, 12)}: npm ci and npm run build (once per commit; a few minutes)`)
  await run("npm", ["ci", "--no-audit", "--no-fund"], directory)
  await run("npm", ["run", "build"], directory)
  if (!existsSync(main)) throw new Error(`the reference's build made no ${main}`)
  writeFileSync(marker, builtMarker())
  return main
}
