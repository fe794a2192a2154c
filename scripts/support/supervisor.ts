/**
 * Keeps one service process running on a fixed port and database, SIGKILLs and restarts it on demand,
 * and tells a request that failed because of a kill from one a live server dropped.
 */
import {
  call,
  killHard,
  type Reply,
  type ServiceProcess,
  sleep,
  startService,
  stopService,
  waitUntilReady
} from "./service.js"
import type { Violations } from "./violations.js"

export class Supervisor {
  /** Incremented at every kill: a request that started in an older generation may have lost its server. */
  private generation = 0
  private down = true
  private service: ServiceProcess | undefined
  private readonly killedOnPurpose = new WeakSet<ServiceProcess>()
  kills = 0

  constructor(
    readonly port: number,
    private readonly databaseUrl: string,
    private readonly violations: Violations,
    private readonly main?: string,
    private readonly env?: Readonly<Record<string, string>>
  ) {}

  get base() {
    return `http://127.0.0.1:${this.port}`
  }

  get isDown() {
    return this.down
  }

  async start() {
    const service = startService({ port: this.port, databaseUrl: this.databaseUrl, main: this.main, env: this.env })
    this.service = service
    void service.exited.then(({ code, signal }) => {
      if (this.killedOnPurpose.has(service)) return
      this.down = true
      this.generation++
      this.violations.add(
        "service exited by itself",
        `code ${code}, signal ${signal}:\n${service.output().slice(-4_000)}`
      )
      if (this.service === service) {
        this.start().catch((error) => this.violations.add("restart failed", String(error)))
      }
    })
    await waitUntilReady(service, this.port)
    this.down = false
  }

  /** SIGKILL at once, then a restart on the same database, ready when this resolves. */
  async killAndRestart() {
    const service = this.service
    this.down = true
    this.generation++
    if (service) {
      this.killedOnPurpose.add(service)
      await killHard(service)
    }
    this.kills++
    await this.start()
  }

  /** Restarts the service if it is not up (after it exited by itself and could not restart). */
  async ensureUp() {
    await this.whileDown(Date.now() + 90_000)
    if (this.down) await this.killAndRestart()
  }

  async stop() {
    if (this.service) {
      this.killedOnPurpose.add(this.service)
      await stopService(this.service)
    }
    this.down = true
  }

  /** Waits while the service is being restarted, bounded by `deadline`. */
  async whileDown(deadline: number) {
    while (this.down && Date.now() < deadline) await sleep(50)
  }

  /**
   * One request. Undefined when no answer came because the server was killed meanwhile (expected);
   * no answer from a server that stayed up, and any 5xx, are violations.
   */
  async request(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    timeoutMs = 30_000
  ): Promise<Reply & { kind: "answer" } | undefined> {
    const generation = this.generation
    const wasDown = this.down
    const reply = await call(this.base, method, path, body, timeoutMs)
    if (reply.kind === "down") {
      if (!wasDown && !this.down && generation === this.generation) {
        this.violations.add(
          reply.reason === "timeout" ? "request hung on a live server" : "no answer from a live server",
          `${method} ${path} ${JSON.stringify(body ?? null)}: ${reply.reason}`
        )
      }
      return undefined
    }
    if (reply.status >= 500) {
      const log = this.service?.output().slice(-1_500) ?? ""
      this.violations.add(
        `HTTP ${reply.status}`,
        `${method} ${path} ${JSON.stringify(body ?? null)} -> ${JSON.stringify(reply.body)}\nservice log tail:\n${log}`
      )
    }
    return reply
  }
}
