/**
 * Peer frameworks measured beside our service (`npm run bench -- --peer voltagent`, `--beside voltagent`):
 * each a package folder of its own under bench/ (not a dependency of ours), installed with `npm ci` when
 * its node_modules is missing, whose server.mjs serves the same agent and pipeline through that
 * framework's own HTTP server. Rows 1 to 5 load it in place of ours (docs/benchmarks.md, "Beside VoltAgent").
 */
import { type ChildProcess, spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { freePort, isAlive, startService, stopService } from "../support/service.js"
import { AGENT_ID, type BenchOptions, type Lab, makeLab, once, type ServiceTarget } from "./lab.js"
import { REPO_ROOT, type RunningService, waitForHttp } from "./processes.js"

export interface Peer {
  /** What `--peer` and `--beside` take. */
  readonly id: string
  /** The framework, without its version (read from the installed packages). */
  readonly framework: string
  /** The package folder: package.json, package-lock.json, server.mjs. */
  readonly folder: string
  /** The packages whose installed versions a table names, the framework's own first. */
  readonly packages: ReadonlyArray<string>
  readonly target: Omit<ServiceTarget, "name">
  /** Set for the peer's server beside the fake model's env. */
  readonly env: Readonly<Record<string, string>>
}

/**
 * VoltAgent's /agents/:id/stream sends the AI SDK's full stream as SSE, one `data: {"type":...}` frame a
 * part (start, start-step with the whole request to the model, text-start, text-delta, ...); the first
 * that carries text is a frame whose own type is text-delta, with a non-empty `text`.
 */
export const voltAgentTextDelta = (received: string): boolean =>
  /^data: \{"type":"text-delta",.*"text":"[^"]/m.test(received)

export const VOLTAGENT: Peer = {
  id: "voltagent",
  framework: "VoltAgent",
  folder: join(REPO_ROOT, "bench/peer-voltagent"),
  packages: ["@voltagent/core", "@voltagent/server-hono", "ai", "@ai-sdk/openai-compatible", "zod"],
  // VoltAgent's own routes: the same paths and request bodies as ours (its docs' api/endpoints).
  target: {
    agents: { path: "/agents" },
    text: { path: `/agents/${AGENT_ID}/text`, body: { input: "hi" } },
    stream: { path: `/agents/${AGENT_ID}/stream`, body: { input: "hi" }, ready: voltAgentTextDelta },
    pipeline: { path: "/workflows/pipeline/execute", body: { input: { text: " hi ", n: 21 } } }
  },
  // As deployed: outside production VoltAgent fetches a model registry from the internet at start-up
  // (and every 30 minutes). Its log level still comes from LOG_LEVEL, which the bench sets as for ours.
  env: { NODE_ENV: "production" }
}

export const PEERS: ReadonlyArray<Peer> = [VOLTAGENT]

/** The rows that can run against a peer. */
export const PEER_ROWS = ["1", "2", "3", "4", "5"] as const

export const peerNamed = (id: string): Peer => {
  const peer = PEERS.find((candidate) => candidate.id === id)
  if (peer === undefined) throw new Error(`unknown peer "${id}" (peers: ${PEERS.map((known) => known.id).join(", ")})`)
  return peer
}

/** `npm ci` in the peer's folder when its node_modules is missing; npm's output to stderr only. */
export const ensureInstalled = (peer: Peer, log: (message: string) => void): void => {
  if (existsSync(join(peer.folder, "node_modules"))) return
  log(`installing ${peer.framework} (npm ci in ${peer.folder})`)
  // Under `npm run`, npm_execpath is the npm that runs us; elsewhere the npm on PATH.
  const npmCli = process.env.npm_execpath
  const [command, args] = npmCli !== undefined && npmCli.endsWith(".js")
    ? [process.execPath, [npmCli, "ci", "--no-audit", "--no-fund"]]
    : ["npm", ["ci", "--no-audit", "--no-fund"]]
  const result = spawnSync(command, args, { cwd: peer.folder, stdio: ["ignore", process.stderr, "inherit"] })
  if (result.status !== 0) {
    throw new Error(`npm ci in ${peer.folder} failed (${result.error?.message ?? `exit code ${result.status}`})`)
  }
}

/** The installed version of each of the peer's packages, as "name version". */
export const installedVersions = (peer: Peer): Array<string> =>
  peer.packages.map((name) => {
    try {
      const manifest = JSON.parse(readFileSync(join(peer.folder, "node_modules", name, "package.json"), "utf8"))
      return `${name} ${String(manifest.version)}`
    } catch {
      return `${name} (not installed)`
    }
  })

/** "VoltAgent 2.10.0": the framework and its own package's installed version. */
export const peerName = (peer: Peer): string => {
  const [own] = installedVersions(peer)
  return `${peer.framework} ${own.slice(own.lastIndexOf(" ") + 1)}`
}

const children = new Set<ChildProcess>()
let exitHookInstalled = false
const killOnExit = (child: ChildProcess) => {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on("exit", () => {
      for (const running of children) {
        if (running.exitCode === null && running.signalCode === null) running.kill("SIGKILL")
      }
    })
  }
  children.add(child)
  child.once("exit", () => children.delete(child))
}

/** `node <folder>/server.mjs --port N` with the fake model's env; resolves once GET /agents answers. */
export const startPeer = async (peer: Peer, env: Record<string, string>): Promise<RunningService> => {
  const port = await freePort()
  // The service's own start-up helper: the same env hygiene, its output kept (the last 64 KiB), not printed.
  const server = startService({
    port,
    databaseUrl: "",
    main: join(peer.folder, "server.mjs"),
    env: { ...env, ...peer.env }
  })
  killOnExit(server.child)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}${peer.target.agents.path}`, () => isAlive(server), 60_000)
  } catch (error) {
    await stopService(server, 1_000)
    throw new Error(`${peer.framework} did not start: ${String(error)}\n${server.output()}`)
  }
  return {
    name: peerName(peer),
    port,
    pid: server.pid,
    url,
    process: server,
    databaseFile: "",
    stop: () => stopService(server)
  }
}

const ourRowsOnly = (): never => {
  throw new Error("a peer lab runs rows 1 to 5 only")
}

/** A lab whose rows 1 to 5 load the peer's server (the fake model is the lab's own, as for ours). */
export const makePeerLab = (options: BenchOptions, peer: Peer): Lab => {
  const base = makeLab(options)
  const service = once(async () => startPeer(peer, await base.modelEnv()))
  return {
    ...base,
    target: { ...peer.target, name: peerName(peer) },
    startService: ourRowsOnly,
    startServiceOn: ourRowsOnly,
    spawnService: ourRowsOnly,
    service: service.get,
    serviceDatabase: async () => undefined,
    close: async () => {
      await service.started()?.then((running) => running.stop(), () => undefined)
      await base.close()
    }
  }
}
