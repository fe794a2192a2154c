#!/usr/bin/env node
/**
 * The README's "Embedding" steps, read from README.md itself: the files it shows in full and the command
 * blocks, each the fenced block after a `<!-- sample: NAME -->` line. test/embedding-pack.test.ts follows
 * them in an empty folder, offline. `node scripts/embedding-steps.mjs --prefetch` (CI's set-up, the one
 * step that downloads) follows the install steps once online, so that npm's cache holds every package
 * they resolve: the newest TypeScript of that day included, as a reader's `npm install typescript` gets.
 */
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

export const ROOT = fileURLToPath(new URL("..", import.meta.url))
export const FILES = ["package.json", "tsconfig.json", "server.ts", "client.ts"]
const run = promisify(execFile)

/** The fenced block after `<!-- sample: name -->`. */
export const sample = (readme, name) => {
  const match = new RegExp(`<!-- sample: ${name.replace(/\./g, "\\.")} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\``).exec(
    readme
  )
  if (match === null) throw new Error(`README.md has no sample "${name}"`)
  return match[1]
}

const commandLines = (block) => block.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"))

export const embeddingSteps = (readme) => ({
  files: Object.fromEntries(FILES.map((name) => [name, `${sample(readme, name)}\n`])),
  install: commandLines(sample(readme, "install")),
  run: commandLines(sample(readme, "run"))
})

/** An install command with the package's name (a whole word) replaced by its tarball's path. */
export const withTarball = (command, name, tarball) =>
  command.split(" ").map((word) => (word === name ? tarball : word)).join(" ")

/**
 * The file the prefetch leaves in npm's cache folder once the cache holds what these steps resolve: named
 * by what the resolution depends on (the README's package.json and install lines, this package's
 * dependencies), so that a change to any of them asks for a new prefetch. Offline, npm reports a missing
 * packument as an unresolvable tree (ERESOLVE), not as a cache miss; hence the marker.
 */
export const prefetchMarker = async (steps) => {
  const { dependencies, peerDependencies } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  const key = createHash("sha256")
    .update(JSON.stringify([steps.files["package.json"], steps.install, dependencies, peerDependencies]))
    .digest("hex")
    .slice(0, 16)
  const { stdout } = await run("npm", ["config", "get", "cache"])
  return join(stdout.trim(), `_embedding-steps-${key}`)
}

/**
 * In the empty folder `dir`: the README's package.json, then its install commands, run as written by
 * bash (the package's name replaced by `tarball`). `offline` makes npm resolve from its cache only.
 */
export const installProject = async (dir, steps, { name, tarball, offline }) => {
  writeFileSync(join(dir, "package.json"), steps.files["package.json"])
  const env = {
    ...process.env,
    npm_config_offline: offline ? "true" : "false",
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false"
  }
  for (const command of steps.install) {
    const line = withTarball(command, name, tarball)
    await run("bash", ["-eo", "pipefail", "-c", line], { cwd: dir, env, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 })
      .catch((error) => {
        throw new Error(
          `\`${line}\`${offline ? " (offline)" : ""} failed in ${dir}:\n${error.stdout ?? ""}${error.stderr ?? ""}`
        )
      })
  }
}

/** Packs this checkout (without building: only its package.json matters to what the install resolves). */
export const pack = async (destination) => {
  const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", destination], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024
  })
  return JSON.parse(stdout)[0]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] !== "--prefetch") {
    process.stderr.write("usage: node scripts/embedding-steps.mjs --prefetch\n")
    process.exit(2)
  }
  const dir = mkdtempSync(join(tmpdir(), "embed-prefetch-"))
  try {
    const steps = embeddingSteps(readFileSync(join(ROOT, "README.md"), "utf8"))
    const packed = await pack(dir)
    const app = join(dir, "app")
    mkdirSync(app)
    const { name } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
    await installProject(app, steps, { name, tarball: join(dir, packed.filename), offline: false })
    writeFileSync(await prefetchMarker(steps), `${new Date().toISOString()}\n`)
    const typescript = JSON.parse(readFileSync(join(app, "node_modules", "typescript", "package.json"), "utf8")).version
    process.stderr.write(`embedding-steps: npm's cache holds the README's install (TypeScript ${typescript})\n`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
