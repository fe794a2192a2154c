import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { once } from "node:events"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { ServiceApi } from "../src/Api.js"
import { freePort } from "./support/process.js"

// What an embedder does, against `npm pack` output in a new directory: install the package with the
// peers the README names, compile the README's samples with tsc and run them. Nothing is downloaded:
// npm runs --offline from the cache `npm ci` filled. better-sqlite3 ≥ 13 ships its Node-API binaries
// inside the package, so the one installed loads on every supported line (checked below, naming the ABI).

const ROOT = fileURLToPath(new URL("..", import.meta.url))
const README = readFileSync(join(ROOT, "README.md"), "utf8")
const run = promisify(execFile)

/** The fenced block after `<!-- sample: name -->` in the README. */
const sample = (name: string): string => {
  const match = new RegExp(`<!-- sample: ${name.replace(/\./g, "\\.")} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\``).exec(README)
  if (match === null) throw new Error(`README.md has no sample "${name}"`)
  return match[1]
}

/** The README's install steps: `npm pkg set overrides.NAME=RANGE` lines, then `name@range` specs by
 *  command (`npm install` / `npm install --save-dev`). */
const installSpecs = () => {
  const lines = sample("install").split("\n")
  const specs = (prefix: RegExp) =>
    lines.filter((line) => prefix.test(line)).flatMap((line) => line.replace(prefix, "").split(/\s+/)).map((spec) => {
      const at = spec.lastIndexOf("@")
      return at > 0 ? [spec.slice(0, at), spec.slice(at + 1)] as const : [spec, "*"] as const
    })
  const overrides = Object.fromEntries(lines.flatMap((line) => {
    const match = /^npm pkg set overrides\.(\S+)=(\S+)$/.exec(line)
    return match === null ? [] : [[match[1], match[2]]]
  }))
  return { overrides, dependencies: specs(/^npm install (?!--save-dev)/), devDependencies: specs(/^npm install --save-dev /) }
}

const packageJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
const rootLock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8"))

/** Every installed copy of `name` under a node_modules tree. */
const copiesOf = (nodeModules: string, name: string): Array<string> =>
  readdirSync(nodeModules, { withFileTypes: true }).flatMap((entry) => {
    if (!entry.isDirectory()) return []
    const dir = join(nodeModules, entry.name)
    if (entry.name.startsWith("@")) return readdirSync(dir).flatMap((scoped) => inPackage(join(dir, scoped), `${entry.name}/${scoped}`, name))
    return inPackage(dir, entry.name, name)
  })
const inPackage = (dir: string, dirName: string, name: string): Array<string> => [
  ...(dirName === name && existsSync(join(dir, "package.json")) ? [dir] : []),
  ...(existsSync(join(dir, "node_modules")) ? copiesOf(join(dir, "node_modules"), name) : [])
]

const npm = async (cwd: string, args: ReadonlyArray<string>) => {
  try {
    return await run("npm", [...args], {
      cwd,
      timeout: 180_000,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, npm_config_update_notifier: "false" }
    })
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? "")
    const missing = /request to (\S+) failed: cache mode is 'only-if-cached'/.exec(stderr)
    if (missing !== null) {
      throw new Error(`npm ${args[0]} --offline: ${missing[1]} is not in npm's cache. Run \`npm ci\` in the repository first; this test never downloads.`)
    }
    throw new Error(`npm ${args.join(" ")} failed in ${cwd}:\n${stderr}`)
  }
}

const waitForStatus = async (url: string, child: ChildProcess, output: () => string, ms = 90_000) => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the sample exited with ${child.exitCode}:\n${output()}`)
    const status = await fetch(url, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status, () => 0)
    if (status !== 0) return status
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`nothing answered ${url} within ${ms} ms:\n${output()}`)
}

describe("embedding the packed package", () => {
  it("the README names the peers at package.json's ranges, and effect and the @effect packages of the types are peers", () => {
    const { dependencies, devDependencies, overrides } = installSpecs()
    // Issue #28: @effect/sql-sqlite-node pins better-sqlite3 ^12 (the ObjectWrap abort on Node ≥ 24.19);
    // the embedder's own override lifts every copy to ours.
    expect(overrides).toEqual({ "better-sqlite3": packageJson.dependencies["better-sqlite3"] })
    expect(Object.fromEntries(devDependencies)["@types/node"], "@types/node follows the lowest supported line").toBe(/^\^(\d+)/.exec(packageJson.engines.node)![1])
    expect(dependencies[0][0]).toBe(packageJson.name)
    expect(Object.fromEntries(dependencies.slice(1))).toEqual(packageJson.peerDependencies)
    for (const [name, range] of Object.entries<string>(packageJson.peerDependencies)) {
      expect(packageJson.dependencies[name], `${name} is a peer, not a dependency`).toBeUndefined()
      expect(packageJson.devDependencies[name], `${name} is pinned for development`).toBe(range.replace("^", "~"))
    }
  })

  it("the README's client table lists ServiceApi's groups and methods", () => {
    const table = /<!-- client-methods:start -->\n([\s\S]*?)<!-- client-methods:end -->/.exec(README)
    expect(table, "README.md has no client-methods table").not.toBeNull()
    const documented = table![1].trim().split("\n").slice(2).map((row) => {
      const [group, methods] = row.split("|").slice(1, 3).map((cell) => cell.trim())
      return `${group.replace(/`/g, "")}: ${methods.replace(/`/g, "")}`
    })
    const actual = Object.values(ServiceApi.groups).map((group) =>
      `${group.identifier}: ${Object.values(group.endpoints).map((endpoint) => endpoint.name).join(", ")}`
    )
    expect(documented).toEqual(actual)
  })

  it("npm pack output installs offline beside its peers; the README's samples compile with tsc and serve", async () => {
    if (!existsSync(join(ROOT, "dist", "index.d.ts"))) throw new Error("dist/ is missing: run `npm run build` first")
    const dir = mkdtempSync(join(tmpdir(), "embed-pack-"))
    let server: ChildProcess | undefined
    try {
      // --ignore-scripts: prepack would rebuild dist/ under the other tests' feet.
      const packed = JSON.parse((await npm(ROOT, ["pack", "--ignore-scripts", "--json", "--pack-destination", dir])).stdout)[0]
      const files: Array<string> = packed.files.map((file: { path: string }) => file.path)
      expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/main.js", "dist/observability/storeWriterWorker.js", "dist/storage/commitWorker.js"]))
      expect(files.filter((file) => !file.startsWith("dist/") && file !== "package.json" && file !== "README.md")).toEqual([])

      // The fresh project: the README's install lines, the package from its tarball. Its lock is this
      // repository's (the versions `npm ci` put in the cache) under the new root.
      const tarball = `file:../${packed.filename}`
      const { dependencies, devDependencies, overrides } = installSpecs()
      const app = join(dir, "app")
      mkdirSync(app)
      const manifest = {
        name: "embedding-sample",
        private: true,
        type: "module",
        dependencies: Object.fromEntries(dependencies.map(([name, range]) => [name, name === packageJson.name ? tarball : range])),
        devDependencies: Object.fromEntries(devDependencies),
        overrides
      }
      writeFileSync(join(app, "package.json"), JSON.stringify(manifest, null, 2))
      const { "": _root, ...locked } = rootLock.packages
      const integrity = `sha512-${createHash("sha512").update(readFileSync(join(dir, packed.filename))).digest("base64")}`
      const { scripts: _scripts, devDependencies: _dev, files: _files, ...published } = packageJson
      writeFileSync(join(app, "package-lock.json"), JSON.stringify({
        name: manifest.name,
        lockfileVersion: 3,
        requires: true,
        packages: {
          "": { name: manifest.name, dependencies: manifest.dependencies, devDependencies: manifest.devDependencies },
          [`node_modules/${packageJson.name}`]: { ...published, resolved: tarball, integrity },
          ...locked
        }
      }, null, 2))
      await npm(app, ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"])

      const modules = join(app, "node_modules")
      expect(copiesOf(modules, "effect"), "one copy of Effect").toEqual([join(modules, "effect")])
      expect(copiesOf(modules, "@effect/platform"), "one copy of @effect/platform").toEqual([join(modules, "@effect", "platform")])
      const installed = JSON.parse(readFileSync(join(modules, packageJson.name, "package.json"), "utf8"))
      const typeImports = new Set<string>()
      const walk = (path: string): void =>
        readdirSync(path, { withFileTypes: true }).forEach((entry) => {
          if (entry.isDirectory()) return walk(join(path, entry.name))
          if (!entry.name.endsWith(".d.ts")) return
          for (const [, name] of readFileSync(join(path, entry.name), "utf8").matchAll(/(?:from |import\()"((?:@effect\/[^/"]+)|effect)[/"]/g)) {
            typeImports.add(name)
          }
        })
      walk(join(modules, packageJson.name, "dist"))
      expect([...typeImports].filter((name) => installed.peerDependencies?.[name] === undefined), "imported by the types but not a peer").toEqual([])

      // One better-sqlite3 in the tree (ours and @effect/sql-sqlite-node's), without the ObjectWrap abort.
      const listed = JSON.parse((await npm(app, ["ls", "better-sqlite3", "--all", "--json"])).stdout)
      const versions = new Set<string>()
      const collect = (node: { dependencies?: Record<string, { version?: string }> }): void =>
        Object.entries(node.dependencies ?? {}).forEach(([name, child]) => {
          if (name === "better-sqlite3" && child.version !== undefined) versions.add(child.version)
          collect(child as never)
        })
      collect(listed)
      expect([...versions], "npm ls better-sqlite3 in the embedding project").toHaveLength(1)
      expect(Number([...versions][0].split(".")[0])).toBeGreaterThanOrEqual(13)
      // Its binary loads on this line (Node-API, one build for all lines), or the failure names the ABI.
      await run(process.execPath, ["-e", "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"], { cwd: app }).catch((error) => {
        throw new Error(`better-sqlite3 ${[...versions][0]} does not load on Node ${process.version} (ABI ${process.versions.modules}, Node-API ${process.versions.napi}):\n${error.stderr}`)
      })

      writeFileSync(join(app, "server.ts"), sample("server.ts"))
      writeFileSync(join(app, "client.ts"), sample("client.ts"))
      writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
        compilerOptions: { target: "ES2022", module: "NodeNext", strict: true, skipLibCheck: true, types: ["node"] },
        files: ["server.ts", "client.ts"]
      }))
      await run(process.execPath, [join(modules, "typescript", "bin", "tsc"), "-p", "."], { cwd: app, timeout: 180_000 }).catch((error) => {
        throw new Error(`the README's samples do not compile:\n${error.stdout}${error.stderr}`)
      })

      const port = await freePort()
      const { PATH, HOME } = process.env
      let output = ""
      server = spawn(process.execPath, ["server.js", "--port", String(port)], { cwd: app, env: { PATH, HOME }, stdio: ["ignore", "pipe", "pipe"] })
      server.stdout!.on("data", (chunk) => (output += chunk))
      server.stderr!.on("data", (chunk) => (output += chunk))
      expect(await waitForStatus(`http://127.0.0.1:${port}/tools`, server, () => output)).toBe(200)
      const tools = await fetch(`http://127.0.0.1:${port}/tools`).then((response) => response.json())
      expect(tools.data.map((tool: { name: string }) => tool.name)).toEqual(["shout"])

      const client = await run(process.execPath, ["client.js", `http://127.0.0.1:${port}`], { cwd: app, env: { PATH, HOME }, timeout: 60_000 })
      expect(JSON.parse(client.stdout)).toEqual({ tools: ["shout"], shout: { loud: "HELLO" }, status: "suspended" })
      server.kill("SIGTERM")
      const [code] = await once(server, "exit")
      expect(code).toBe(0)
    } finally {
      if (server?.exitCode === null) server.kill("SIGKILL")
      rmSync(dir, { recursive: true, force: true })
    }
  }, 240_000)
})
