import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { serviceMigrations as migrations } from "../src/Database.js"
import { type Cluster, createCluster, type Instance, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

let cluster: Cluster | undefined

afterEach(async () => {
  await cluster?.close()
  cluster = undefined
})

const expectedMigrations = Object.keys(migrations)
  .map((name) => ({ id: Number.parseInt(name, 10), name: name.replace(/^\d+_/, "") }))
  .sort((a, b) => a.id - b.id)

const expectAllReadyAndMigratedOnce = async (cluster: Cluster, instances: ReadonlyArray<Instance>) => {
  const answers = await Promise.all(instances.map((instance) => cluster.get(instance, "/ready")))
  expect(answers.map((answer) => answer.body.data)).toEqual(
    instances.map((instance) => ({ status: "ready", instanceId: instance.id }))
  )
  const applied = await cluster.query<{ migration_id: number; name: string }>(
    "SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id"
  )
  expect(applied.map((row) => ({ id: row.migration_id, name: row.name }))).toEqual(expectedMigrations)
  for (const instance of instances) expect(instance.process.stderr()).toBe("")
}

describe.skipIf(!postgresAvailable)("several instances starting on one empty Postgres", () => {
  it("three started at the same moment all become ready; each migration is applied once (3 trials)", async () => {
    for (let trial = 0; trial < 3; trial++) {
      cluster = await createCluster()
      const instances = await cluster.startAll(["a", "b", "c"])
      await expectAllReadyAndMigratedOnce(cluster, instances)
      await cluster.close()
      cluster = undefined
    }
  }, 240_000)

  it(
    "three that reach their migrations at the very same moment all become ready; each migration is applied once",
    async () => {
      const started = await createCluster()
      cluster = started
      // Held in an open transaction, an uncommitted migrations table makes every instance that tries to
      // create it wait on this session: once all three wait, the rollback lets them race for real.
      const instances = await Effect.runPromise(
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          const holder = yield* sql.reserve
          yield* holder.executeUnprepared("BEGIN", [], undefined)
          yield* holder.executeUnprepared(
            "CREATE TABLE effect_sql_migrations (migration_id integer primary key, created_at timestamptz not null default now(), name text not null)",
            [],
            undefined
          )
          const instances = yield* Effect.promise(() => Promise.all(["a", "b", "c"].map((id) => started.spawn(id))))
          const waiting = sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`
          yield* Effect.promise(() =>
            until(
              async () => (await Effect.runPromise(waiting))[0].waiting >= 3,
              60_000,
              "three instances waiting to migrate"
            )
          )
          yield* holder.executeUnprepared("ROLLBACK", [], undefined)
          return instances
        }).pipe(
          Effect.scoped,
          Effect.provide(PgClient.layer({ url: Redacted.make(started.databaseUrl), maxConnections: 2 }))
        )
      )
      await Promise.all(instances.map((instance) => started.ready(instance)))
      await expectAllReadyAndMigratedOnce(started, instances)
    },
    120_000
  )
})

describe.skipIf(!postgresAvailable)("the cluster harness", () => {
  it("stops, continues, terminates and kills one instance while the other keeps answering", async () => {
    const started = await createCluster()
    cluster = started
    const [a, b] = await started.startAll(["a", "b"])
    await started.stop(a)
    const stopped = await Promise.race([
      fetch(`${a.url}/health`).then(() => "answered", () => "failed"),
      new Promise((resolve) => setTimeout(() => resolve("no answer"), 500))
    ])
    expect(stopped).toBe("no answer")
    expect((await started.get(b, "/health")).body.data).toEqual({ status: "up", instanceId: "b" })
    await started.resume(a)
    await until(async () => (await started.get(a, "/health")).status === 200, 10_000, "a answering again")
    expect(await started.terminate(a)).toEqual({ code: 0, signal: null })
    expect(await started.kill(b)).toEqual({ code: null, signal: "SIGKILL" })
    expect(() => started.instance("a")).toThrow("no running instance a")
  }, 120_000)
})
