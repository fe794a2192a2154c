/**
 * Row 9 (issue #11, scale-out): the pipeline workflow on one Postgres database, served first by one
 * `node dist/main.js` and then by three, each its own process, port and SERVICE_INSTANCE_ID, with the
 * load spread evenly over them (one autocannon per instance, all at once). Each measurement gets a
 * fresh database on the local server, dropped afterwards.
 */
import { createPostgresDatabase } from "../support/database.js"
import { type LoadResult, loadTogether, type Target } from "./client.js"
import { type Lab, printableUrl } from "./lab.js"
import type { Server } from "./processes.js"
import type { RowResult } from "./table.js"

const CREATE_DATABASE_DEADLINE_MS = 15_000

const pipelineOn = (server: Server): Target => ({
  url: server.url,
  method: "POST",
  path: "/workflows/pipeline/execute",
  body: { input: { text: " hi ", n: 21 } }
})

/** `total` connections split over `parts` as evenly as they go (50 over 3: 17, 17, 16). */
export const splitConnections = (total: number, parts: number): Array<number> =>
  Array.from({ length: parts }, (_, index) => Math.floor(total / parts) + (index < total % parts ? 1 : 0))

/** A fresh database on the local server, or why there is none (Postgres not answering in time). */
const freshDatabase = async (adminUrl: string) => {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${CREATE_DATABASE_DEADLINE_MS / 1000} s`)),
      CREATE_DATABASE_DEADLINE_MS
    )
  })
  try {
    return await Promise.race([createPostgresDatabase(adminUrl), deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * `count` instances started together on a fresh database (their migrations meet under the advisory
 * lock), loaded at once with `connections` split between them; every instance is stopped and the
 * database dropped, whatever happens.
 */
const measureInstances = async (lab: Lab, count: number, connections: number): Promise<Array<LoadResult>> => {
  const database = await freshDatabase(lab.options.postgresUrl)
  const started: Array<Server> = []
  try {
    const env = await lab.modelEnv()
    const starting = await Promise.allSettled(
      Array.from(
        { length: count },
        (_, index) => lab.startServiceOn(database.url, { ...env, SERVICE_INSTANCE_ID: `bench9-${count}-${index + 1}` })
      )
    )
    for (const outcome of starting) if (outcome.status === "fulfilled") started.push(outcome.value)
    const failed = starting.find((outcome) => outcome.status === "rejected")
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    const split = splitConnections(connections, count)
    return await loadTogether(
      started.map((server, index) => ({ target: pipelineOn(server), connections: split[index] })),
      {
        seconds: lab.options.seconds
      }
    )
  } finally {
    await Promise.all(started.map((server) => server.stop()))
    await database.drop().catch((error: unknown) =>
      console.error(`row 9: could not drop ${printableUrl(database.url)}: ${String(error)}`)
    )
  }
}

const sum = (values: ReadonlyArray<number>) => values.reduce((total, value) => total + value, 0)

/** Row 9: completed pipeline executions per second on Postgres with one instance, then three; their ratio. */
export const scaleOutRow = async (lab: Lab): Promise<RowResult> => {
  const connections = lab.options.connections
  if (connections < 3) return { id: "9", cells: {}, notes: ["needs at least 3 --connections (one per instance)"] }
  try {
    await (await freshDatabase(lab.options.postgresUrl)).drop()
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return {
      id: "9",
      cells: {},
      notes: [`Postgres does not answer at ${printableUrl(lab.options.postgresUrl)}: ${reason.slice(0, 300)}`]
    }
  }
  const [one] = await measureInstances(lab, 1, connections)
  const three = await measureInstances(lab, 3, connections)
  const threeTotal = sum(three.map((result) => result.perSecond))
  const errorsThree = sum(three.map((result) => result.errors))
  const notes = [
    ...(one.errors > 0 ? [`${one.errors} failed requests with one instance`] : []),
    ...(errorsThree > 0 ? [`${errorsThree} failed requests with three instances`] : [])
  ]
  return {
    id: "9",
    cells: {
      one: one.perSecond,
      three: threeTotal,
      threeA: three[0].perSecond,
      threeB: three[1].perSecond,
      threeC: three[2].perSecond,
      threeOverOne: threeTotal / one.perSecond,
      errorsOne: one.errors,
      errorsThree
    },
    notes
  }
}
