/**
 * Several service processes on one database (Postgres), each kept up by its own Supervisor, seen by the
 * chaos clients as one: a request goes to a random instance that is up; a kill takes a random one.
 * With one instance it is that instance's Supervisor.
 */
import { freePort, sleep } from "./service.js"
import { Supervisor } from "./supervisor.js"
import type { Violations } from "./violations.js"

export class Instances {
  private constructor(readonly members: ReadonlyArray<Supervisor>) {}

  static async make(count: number, databaseUrl: string, violations: Violations, options: {
    readonly main?: string | undefined
    readonly env?: Readonly<Record<string, string>> | undefined
  }) {
    const members: Array<Supervisor> = []
    for (let index = 0; index < count; index++) {
      const env = { ...options.env, ...(count > 1 ? { SERVICE_INSTANCE_ID: `chaos-${index + 1}` } : {}) }
      members.push(new Supervisor(await freePort(), databaseUrl, violations, options.main, env))
    }
    return new Instances(members)
  }

  get kills() {
    return this.members.reduce((sum, member) => sum + member.kills, 0)
  }

  private get up() {
    return this.members.filter((member) => !member.isDown)
  }

  async start() {
    await Promise.all(this.members.map((member) => member.start()))
  }

  /** Waits while every instance is down, bounded by `deadline`. */
  async whileDown(deadline: number) {
    while (this.up.length === 0 && Date.now() < deadline) await sleep(50)
  }

  /** SIGKILL of a random instance that is up, then its restart. */
  async killAndRestart() {
    const candidates = this.up.length > 0 ? this.up : this.members
    await candidates[Math.floor(Math.random() * candidates.length)].killAndRestart()
  }

  async ensureUp() {
    await Promise.all(this.members.map((member) => member.ensureUp()))
  }

  async stop() {
    await Promise.all(this.members.map((member) => member.stop()))
  }

  request(...args: Parameters<Supervisor["request"]>) {
    const up = this.up
    const member = up.length > 0 ? up[Math.floor(Math.random() * up.length)] : this.members[0]
    return member.request(...args)
  }
}
