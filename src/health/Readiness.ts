import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"
import { ServiceUnavailable } from "../core/errors.js"
import { latestMigrationId, Migrations } from "../storage/Migrations.js"
import { MIGRATIONS_TABLE } from "../storage/Sql.js"
import { Lifecycle } from "./Lifecycle.js"

/** A store slower than this to answer one tiny query is as good as unreachable to a load balancer. */
export const STORE_ANSWER_TIMEOUT = Duration.seconds(2)

export interface ReadyReport {
  readonly status: "ready"
  readonly instanceId: string
}

/** Whether this instance should be sent work: not draining, its store answers, and the schema is this build's. */
export class Readiness extends Context.Tag("Readiness")<Readiness, {
  readonly check: Effect.Effect<ReadyReport, ServiceUnavailable>
}>() {}

export const ReadinessLive = Layer.effect(
  Readiness,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lifecycle = yield* Lifecycle
    const { instanceId } = yield* ServerConfig
    const latest = latestMigrationId(yield* Migrations)
    // One statement answers both questions: the store is reachable and the migrations are applied (an
    // instance of a newer build may have applied more). Probes come every few seconds from every load
    // balancer, so the query is not a span of its own; the request is.
    const appliedMigration = sql<{ readonly latest: number | null }>`SELECT MAX(migration_id) AS latest FROM ${
      sql(MIGRATIONS_TABLE)
    }`.pipe(
      Effect.map((rows) => Number(rows[0]?.latest ?? 0)),
      Effect.timeoutFail({
        duration: STORE_ANSWER_TIMEOUT,
        onTimeout: () =>
          new ServiceUnavailable({ message: `Store did not answer within ${Duration.format(STORE_ANSWER_TIMEOUT)}` })
      }),
      Effect.catchTag("SqlError", () => Effect.fail(new ServiceUnavailable({ message: "Store unreachable" }))),
      Effect.withTracerEnabled(false)
    )
    const check = Effect.gen(function*() {
      if (yield* lifecycle.draining) {
        return yield* new ServiceUnavailable({ message: "Instance is draining (shutting down)" })
      }
      const applied = yield* appliedMigration
      if (applied < latest) {
        return yield* new ServiceUnavailable({ message: `Migrations not done: ${applied} of ${latest} applied` })
      }
      return { status: "ready" as const, instanceId }
    })
    return Readiness.of({ check })
  })
)
