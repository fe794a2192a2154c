#!/usr/bin/env node
/**
 * `npm run dev [-- --port N ...]`: bundles src/main.ts with esbuild into .build/dev/, runs it, and on
 * every change under src/ rebuilds and restarts it (the old process gets SIGTERM and is waited for, so
 * the port is free again). A build that fails keeps the last good process running. `./.env`, when there
 * is one, is loaded with Node's --env-file. esbuild does not type-check: run `npm run typecheck` (or
 * rely on your editor). Nothing is downloaded: esbuild is a devDependency.
 */
import { context } from "esbuild"
import { spawn } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const outdir = `${root}.build/dev`
const args = process.argv.slice(2)
const STOP_GRACE_MS = 5000

const say = (message) => process.stderr.write(`[dev] ${message}\n`)

let child
let stopping = false

const stop = () =>
  new Promise((resolve) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return resolve()
    const stopped = child
    stopped.stoppedByDev = true
    const killer = setTimeout(() => stopped.kill("SIGKILL"), STOP_GRACE_MS)
    stopped.once("exit", () => (clearTimeout(killer), resolve()))
    stopped.kill("SIGTERM")
  })

const start = () => {
  const envFile = existsSync(`${root}.env`) ? [`--env-file=${root}.env`] : []
  const started = spawn(process.execPath, ["--enable-source-maps", ...envFile, `${outdir}/main.js`, ...args], {
    cwd: process.cwd(),
    stdio: "inherit"
  })
  started.on("exit", (code, signal) => {
    if (!started.stoppedByDev && !stopping) say(`the service exited (${signal ?? code}); waiting for a change`)
  })
  child = started
}

// Restarts run one after another, each after the previous process has exited.
let restarts = Promise.resolve()
const restart = (first) => {
  restarts = restarts.then(async () => {
    if (stopping) return
    if (!first) say("rebuilt; restarting")
    await stop()
    if (!stopping) start()
  })
}

rmSync(outdir, { recursive: true, force: true })
let builds = 0
const ctx = await context({
  entryPoints: {
    main: `${root}src/main.ts`,
    "observability/storeWriterWorker": `${root}src/observability/storeWriterWorker.ts`,
    "storage/commitWorker": `${root}src/storage/commitWorker.ts`
  },
  outdir,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  format: "esm",
  platform: "node",
  target: "node22",
  sourcemap: "linked",
  external: ["better-sqlite3", "pg-native"],
  banner: {
    js:
      "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);"
  },
  logLevel: "warning",
  plugins: [{
    name: "restart",
    setup: (build) =>
      // onEnd's callback returns nothing (esbuild reports any other value as an error of the plugin).
      build.onEnd((result) => {
        if (result.errors.length > 0) say("build failed; the last good build keeps running")
        else restart(builds++ === 0)
      })
  }]
})
await ctx.watch()
say(`watching src/ (${outdir.slice(root.length)}); Ctrl-C to stop`)

const shutdown = async () => {
  if (stopping) return
  stopping = true
  await ctx.dispose()
  await restarts
  await stop()
  process.exit(0)
}
process.on("SIGINT", shutdown)
process.on("SIGTERM", shutdown)
