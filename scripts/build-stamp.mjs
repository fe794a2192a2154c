#!/usr/bin/env node
/**
 * `npm start` builds only when something the build reads changed. `npm run build` runs `begin` first
 * (hashes its inputs into dist/.build-pending) and `end` last (renames that to dist/.build-stamp), so a
 * stamp exists only for a build that finished, and names the inputs as they were when it started (an
 * edit during the build makes the next start build again). `ensure` (npm start) compares the stamp with
 * the inputs now and runs `npm run build` when they differ or dist/ lacks an entry point; otherwise it
 * costs a hash of src/ (tens of milliseconds). Contents, not mtimes: a checkout or a copy that touches
 * every file does not force a build, and one that changes a file always does.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"

/** What the build reads besides node_modules (whose versions package-lock.json names). */
export const INPUTS = [
  "src",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "scripts/bundle.mjs",
  "scripts/build-stamp.mjs"
]
const ENTRY_POINTS = ["dist/main.js", "dist/index.js", "dist/index.d.ts"]
const STAMP = "dist/.build-stamp"
const PENDING = "dist/.build-pending"

/** Every input file, as a path relative to `root`, sorted. */
const inputFiles = (root) =>
  INPUTS.flatMap((input) => {
    const full = join(root, input)
    if (!existsSync(full)) return []
    if (!statSync(full).isDirectory()) return [input]
    return readdirSync(full, { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(root, join(entry.parentPath, entry.name)))
  }).sort()

/** One hash over every input file's path and contents. */
export const inputsHash = (root) => {
  const hash = createHash("sha256")
  for (const file of inputFiles(root)) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update("\0")
  return hash.digest("hex")
}

/** Why `root`'s dist/ must be built again, or undefined when it is up to date. */
export const staleReason = (root) => {
  const missing = ENTRY_POINTS.find((file) => !existsSync(join(root, file)))
  if (missing !== undefined) return `${missing} is missing`
  if (!existsSync(join(root, STAMP))) return "no finished build is recorded"
  if (readFileSync(join(root, STAMP), "utf8").trim() !== inputsHash(root)) {
    return "its inputs changed since the last build"
  }
  return undefined
}

export const begin = (root) => {
  mkdirSync(join(root, "dist"), { recursive: true })
  writeFileSync(join(root, PENDING), `${inputsHash(root)}\n`)
}

export const end = (root) => renameSync(join(root, PENDING), join(root, STAMP))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url))
  const command = process.argv[2]
  if (command === "begin") begin(root)
  else if (command === "end") end(root)
  else if (command === "ensure") {
    const reason = staleReason(root)
    if (reason !== undefined) {
      process.stderr.write(`build: ${reason}; running npm run build\n`)
      // Under npm, npm_execpath is the npm that runs us (Windows has no `npm` executable to spawn).
      const npm = process.env.npm_execpath
      const { status } = npm !== undefined && npm.endsWith(".js")
        ? spawnSync(process.execPath, [npm, "run", "build"], { cwd: root, stdio: "inherit" })
        : spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit", shell: process.platform === "win32" })
      process.exit(status ?? 1)
    }
  } else {
    process.stderr.write("usage: node scripts/build-stamp.mjs begin | end | ensure\n")
    process.exit(2)
  }
}
