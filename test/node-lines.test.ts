import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { PROCESS_TESTS } from "./process-tests.js"

// Issue #28: the Node lines the project supports, and what depends on them.

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const run = promisify(execFile)
const PINNED = { 22: "22.23.3", 24: "24.21.0", 26: "26.12.1" } as const
const CI = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "0" && process.env.CI !== "false"

/** A module spawns the built service when it names dist/main.js and spawns, or uses process.ts's spawner. */
const spawnsMain = (text: string) =>
  (/dist\/main\.js/.test(text) && /\bspawn\(/.test(text)) || /\bspawnMain\(|\bMAIN\b/.test(text)
const relativeImports = (file: string, text: string) =>
  [...text.matchAll(/from "(\.{1,2}\/[^"]+)"/g)]
    .map(([, spec]) => resolve(dirname(file), spec).replace(/\.js$/, ".ts"))
    .filter((path) => existsSync(path) && !path.endsWith(join("support", "process.ts")))

const reachesMain = (file: string, seen = new Set<string>()): boolean => {
  if (seen.has(file)) return false
  seen.add(file)
  const text = readFileSync(file, "utf8")
  return spawnsMain(text) || relativeImports(file, text).some((imported) => reachesMain(imported, seen))
}

/** Test files that import a helper from a module that can spawn the service, without running it. */
const NOT_PROCESS_TESTS: Record<string, string> = {
  "test/bench-table.test.ts": "imports only printableUrl from scripts/bench/lab.ts; starts no process",
  "test/bench-peer.test.ts":
    "imports the peer's description and the pure comparison of scripts/bench/beside.ts; starts no process"
}

describe("Node lines", () => {
  it("every test file that runs dist/main.js as a process is in the per-line project (test/process-tests.ts)", () => {
    const files = readdirSync(join(ROOT, "test")).filter((name) => name.endsWith(".test.ts")).map((name) =>
      join(ROOT, "test", name)
    )
    const spawning = files.filter((file) => reachesMain(file)).map((file) => relative(ROOT, file))
    expect(spawning.length).toBeGreaterThan(5)
    expect(
      spawning.filter((file) => !PROCESS_TESTS.includes(file as never) && NOT_PROCESS_TESTS[file] === undefined),
      "spawn dist/main.js but are not in PROCESS_TESTS"
    ).toEqual([])
    expect(PROCESS_TESTS.filter((file) => !existsSync(join(ROOT, file))), "listed but missing").toEqual([])
  })

  it("package.json's engines.node is exactly the lines scripts/node-line pins, and CI fetches each", () => {
    const { engines } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
    expect(engines.node).toBe(
      Object.keys(PINNED).map((line) => `^${line === "22" ? "22.12.0" : `${line}.0.0`}`).join(" || ")
    )
    const script = readFileSync(join(ROOT, "scripts", "node-line"), "utf8")
    for (const [line, version] of Object.entries(PINNED)) expect(script).toContain(`${line}) echo ${version} ;;`)
    expect(readFileSync(join(ROOT, ".ci", "run"), "utf8")).toMatch(
      /for line in 22 24 26; do[\s\S]*scripts\/node-line "\$line" --fetch/
    )
  })

  it("every npm script starts by refusing an unsupported Node, naming the scripts/node-line command", async (context) => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
    const unguarded = Object.entries<string>(scripts)
      .filter(([name, command]) =>
        !["pretest", "prepack"].includes(name) && !command.startsWith("node scripts/require-node-line.mjs && ")
      )
    expect(unguarded).toEqual([])
    // The machine's own Node, when it is an unsupported line (20 here), shows the refusal itself.
    const machineNode = "/usr/bin/node"
    const version = existsSync(machineNode) ? (await run(machineNode, ["--version"])).stdout.trim() : ""
    if (!/^v(1\d|20|21|23|25)\./.test(version)) {
      console.warn(`skipped: no unsupported Node at ${machineNode} (${version || "none"}) to check the refusal with`)
      return context.skip()
    }
    const refused = await run(machineNode, [join(ROOT, "scripts", "require-node-line.mjs")], {
      env: { ...process.env, npm_lifecycle_event: "test" }
    })
      .then(() => ({ code: 0, stderr: "" }), (error) => ({ code: error.code, stderr: String(error.stderr) }))
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`Node ${version.slice(1)} is not supported`)
    expect(refused.stderr).toContain("scripts/node-line 24 npm test")
  })

  for (const [line, version] of Object.entries(PINNED)) {
    it(`the pinned Node ${version} is in the cache (fetched by .ci/run; never at test time)`, async (context) => {
      const found = await run(join(ROOT, "scripts", "node-line"), [line, "node", "--version"], {
        env: { ...process.env, NODE_LINE_OFFLINE: "1" }
      })
        .then(({ stdout }) => stdout.trim(), (error) => String(error.stderr ?? error))
      if (!found.startsWith("v")) {
        if (CI) throw new Error(`Node ${version} is missing under CI: ${found}`)
        console.warn(
          `skipped: Node ${version} is not in the cache (${found.trim()}); run scripts/node-line ${line} --fetch`
        )
        return context.skip()
      }
      expect(found).toBe(`v${version}`)
    })
  }

  it(`the Statement GC reproduction exits 0 on this Node (${process.version}): main thread, worker, exit`, async () => {
    const { stdout } = await run(process.execPath, ["--expose-gc", join(ROOT, "scripts", "statement-gc-repro.mjs")], {
      cwd: ROOT,
      timeout: 60_000
    })
      .catch((error) => {
        throw new Error(
          `statement-gc-repro failed (code ${error.code}, signal ${error.signal}):\n${
            String(error.stderr).slice(-3000)
          }`
        )
      })
    expect(stdout).toMatch(/statement-gc-repro: ok \(node v\d+\.\d+\.\d+, better-sqlite3 (\d+)\./)
    expect(Number(/better-sqlite3 (\d+)\./.exec(stdout)![1])).toBeGreaterThanOrEqual(13)
  })

  it(`V8 on this Node (${process.version}) knows --heap-growing-percent (HeapGrowth), and a flag it does not know stops nothing`, async () => {
    const { stdout } = await run(process.execPath, ["--v8-options"], { maxBuffer: 16 * 1024 * 1024 })
    expect(stdout, "HeapGrowth sets a V8 flag this line no longer knows").toMatch(/--heap-growing-percent/)
    const probe = await run(process.execPath, [
      "-e",
      `
      const v8 = require("node:v8")
      v8.setFlagsFromString("--heap-growing-percent=100")
      v8.setFlagsFromString("--no-such-v8-flag-issue-28=100")
      console.log("alive")
    `
    ])
    expect(probe.stdout.trim()).toBe("alive")
  })
})
