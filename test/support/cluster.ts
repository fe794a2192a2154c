/**
 * Several `node dist/main.js` processes on one fresh Postgres database, as a deployment of N instances
 * behind a load balancer would run them. `npm run build` first: the processes run the built service.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import { freshPostgresDatabase } from "./postgres.js"
import { freePort, type Spawned, spawnMain } from "./process.js"

export interface Instance {
  /** Its SERVICE_INSTANCE_ID. */
  readonly id: string
  readonly port: number
  readonly url: string
  readonly process: Spawned
}

export interface JsonResponse {
  readonly status: number
  readonly headers: Headers
  /** The parsed JSON body, or the text when it is not JSON. */
  readonly body: any
}

export interface ClusterOptions {
  /** Instance ids, one process each (default a, b, c). */
  readonly ids?: ReadonlyArray<string>
  /** Variables for every instance (e.g. WORKFLOW_LEASE_SECONDS); `envOf` adds per-instance ones. */
  readonly env?: Readonly<Record<string, string>>
  readonly envOf?: (id: string) => Readonly<Record<string, string>>
  /** Arguments for every instance before `--port` (e.g. `--config file.json`). */
  readonly args?: ReadonlyArray<string>
  /** How long each may take to answer GET /ready with 200 (default 60 s: the machine is shared). */
  readonly readyWithinMs?: number
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Resolves with the first truthy value `condition` returns, polling until `deadlineMs` have passed. */
export const until = async <A>(
  condition: () => A | undefined | null | false | Promise<A | undefined | null | false>,
  deadlineMs: number,
  what = "condition"
): Promise<A> => {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const value = await condition()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`${what} not met within ${deadlineMs} ms`)
    await sleep(25)
  }
}

const parse = async (response: Response): Promise<JsonResponse> => {
  const text = await response.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, headers: response.headers, body }
}

export const getJson = async (url: string, headers: Record<string, string> = {}): Promise<JsonResponse> =>
  parse(await fetch(url, { headers }))

export const postJson = async (
  url: string,
  body: unknown,
  headers: Record<string, string> = {}
): Promise<JsonResponse> =>
  parse(
    await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
  )

/** GET /ready answers 200 (false while the process does not answer at all). */
export const isReady = async (url: string): Promise<boolean> => {
  try {
    return (await fetch(`${url}/ready`)).status === 200
  } catch {
    return false
  }
}

export class Cluster {
  readonly instances: Array<Instance> = []
  private readonly exited = new Set<Instance>()

  constructor(
    readonly databaseUrl: string,
    private readonly options: ClusterOptions,
    private readonly scope: Scope.CloseableScope
  ) {}

  /** The running instance with this id. */
  instance(id: string): Instance {
    const found = this.instances.find((instance) => instance.id === id && !this.exited.has(instance))
    if (found === undefined) throw new Error(`no running instance ${id}`)
    return found
  }

  /** Starts one process per id (default a, b, c) at the same moment; resolves when each is ready. */
  async startAll(ids: ReadonlyArray<string> = this.options.ids ?? ["a", "b", "c"]): Promise<Array<Instance>> {
    const started = await Promise.all(ids.map((id) => this.spawn(id)))
    await Promise.all(started.map((instance) => this.ready(instance)))
    return started
  }

  /** Starts one more instance (not waiting for it: see `ready`). */
  async spawn(id: string, env: Readonly<Record<string, string>> = {}): Promise<Instance> {
    const port = await freePort()
    const spawned = spawnMain([...(this.options.args ?? []), "--port", String(port)], {
      env: {
        DATABASE_URL: this.databaseUrl,
        SERVICE_INSTANCE_ID: id,
        LOG_LEVEL: "warn",
        AI_PROVIDER: "builtin",
        ...this.options.env,
        ...this.options.envOf?.(id),
        ...env
      }
    })
    const instance = { id, port, url: `http://127.0.0.1:${port}`, process: spawned }
    this.instances.push(instance)
    void spawned.exit.then(() => this.exited.add(instance))
    return instance
  }

  /** Waits until the instance answers GET /ready with 200; fails early, with its output, if it exits. */
  async ready(instance: Instance, withinMs = this.options.readyWithinMs ?? 60_000): Promise<void> {
    await until(
      async () => {
        if (this.exited.has(instance)) {
          throw new Error(
            `instance ${instance.id} exited before it was ready:\n${instance.process.stderr()}${instance.process.stdout()}`
          )
        }
        return isReady(instance.url)
      },
      withinMs,
      `GET /ready 200 from instance ${instance.id}`
    )
  }

  /** Sends the signal; for SIGKILL and SIGTERM waits for the exit and returns it. */
  async signal(instance: Instance, signal: "SIGKILL" | "SIGTERM" | "SIGSTOP" | "SIGCONT") {
    instance.process.child.kill(signal)
    if (signal === "SIGSTOP" || signal === "SIGCONT") return undefined
    return instance.process.exit
  }

  kill = (instance: Instance) => this.signal(instance, "SIGKILL")
  terminate = (instance: Instance) => this.signal(instance, "SIGTERM")
  stop = (instance: Instance) => this.signal(instance, "SIGSTOP")
  resume = (instance: Instance) => this.signal(instance, "SIGCONT")

  get = (instance: Instance, path: string, headers?: Record<string, string>) =>
    getJson(`${instance.url}${path}`, headers)
  post = (instance: Instance, path: string, body: unknown, headers?: Record<string, string>) =>
    postJson(`${instance.url}${path}`, body, headers)

  /** Runs one statement on the cluster's database (its own connection), to look at what the instances stored. */
  query = <A extends object = Record<string, unknown>>(statement: string): Promise<ReadonlyArray<A>> =>
    Effect.runPromise(
      Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe<A>(statement)).pipe(
        Effect.scoped,
        Effect.provide(PgClient.layer({ url: Redacted.make(this.databaseUrl), maxConnections: 1 }))
      )
    )

  /** Ends every process (SIGCONT first, so a stopped one can die) and drops the database. */
  async close(): Promise<void> {
    await Promise.all(this.instances.map(async (instance) => {
      if (instance.process.child.exitCode !== null || instance.process.child.signalCode !== null) return
      instance.process.child.kill("SIGCONT")
      instance.process.child.kill("SIGKILL")
      await instance.process.exit
    }))
    await Effect.runPromise(Scope.close(this.scope, Exit.void))
  }
}

/** A fresh Postgres database and no processes yet: `startAll` them, and `close()` it in afterEach. */
export const createCluster = async (options: ClusterOptions = {}): Promise<Cluster> => {
  const scope = Effect.runSync(Scope.make())
  const databaseUrl = await Effect.runPromise(Scope.extend(freshPostgresDatabase, scope))
  return new Cluster(databaseUrl, options, scope)
}
