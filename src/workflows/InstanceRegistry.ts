import { SqlClient, type Statement } from "@effect/sql"
import { Deferred, Effect, Schedule, type Scope } from "effect"
import { StorageError } from "../storage/Sql.js"

/**
 * The instances sharing one store, as each sees the others. On Postgres each instance holds a session
 * advisory lock on its own key for as long as it lives (Postgres releases it the moment the
 * connection dies, so a killed instance is seen at once) and renews a heartbeat in
 * `workflow_instances` (the lease: an instance alive but stuck, or paused, stops renewing). An owner is
 * live while it holds its lock AND its lease is fresh. On SQLite there is one instance: nobody else.
 */
export interface InstanceRegistry {
  readonly instanceId: string
  /** Whether other instances may share the store (Postgres). */
  readonly shared: boolean
  /** A query of the ids of the live instances, for claims (none on SQLite: every other owner is gone). */
  readonly liveOwners: Statement.Fragment | undefined
}

/** The advisory-lock namespace of instance locks (the first of the two int4 keys). */
const LOCK_NAMESPACE = 0x57464f57

/** The instance's lock key: a 31-bit FNV-1a hash of its id. */
export const lockKeyOf = (instanceId: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < instanceId.length; i++) {
    hash ^= instanceId.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash & 0x7fffffff
}

export const makeInstanceRegistry = (
  instanceId: string,
  settings: { readonly leaseMs: number; readonly pollMs: number }
): Effect.Effect<InstanceRegistry, StorageError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) {
      return { instanceId, shared: false, liveOwners: undefined }
    }
    const key = lockKeyOf(instanceId)
    // Registered first so that it runs last: after the heartbeat has stopped and the lock is released.
    yield* Effect.addFinalizer(() => Effect.ignore(sql`DELETE FROM workflow_instances WHERE id = ${instanceId}`))

    /**
     * Holds the lock on a connection of its own until the scope closes, checking the connection every
     * poll; a connection that dies is replaced and the lock taken again (meanwhile others may have
     * taken this instance's executions: its fibers then have their writes refused and stop).
     */
    const holdLock = (locked: Deferred.Deferred<void, StorageError>) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const [row] = yield* connection.executeValues(`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, ${key})`, [])
        if (row?.[0] !== true) {
          return yield* Deferred.fail(locked, new StorageError({
            message: `Instance id ${instanceId} is held by a live instance: give each instance its own SERVICE_INSTANCE_ID`
          }))
        }
        yield* Effect.addFinalizer(() =>
          Effect.ignore(connection.executeValues(`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${key})`, []))
        )
        yield* Deferred.succeed(locked, undefined)
        yield* connection.executeValues("SELECT 1", []).pipe(Effect.repeat(Schedule.spaced(settings.pollMs)))
      })).pipe(
        Effect.tapError((error) => Effect.logWarning("lost the instance lock's connection; taking the lock again", error)),
        Effect.retry(Schedule.spaced(settings.pollMs)),
        Effect.withTracerEnabled(false)
      )

    const locked = yield* Deferred.make<void, StorageError>()
    yield* Effect.forkScoped(Effect.interruptible(Effect.orDie(holdLock(locked))))
    yield* Deferred.await(locked)

    const heartbeat = sql`INSERT INTO workflow_instances (id, lock_key, started_at, heartbeat_at)
      VALUES (${instanceId}, ${key}, now(), now())
      ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), lock_key = EXCLUDED.lock_key`
    yield* heartbeat.pipe(Effect.mapError((error) => new StorageError({ message: `Cannot register the instance: ${error.message}` })))
    yield* heartbeat.pipe(
      Effect.catchAll((error) => Effect.logWarning("could not renew the instance's lease", error)),
      Effect.repeat(Schedule.spaced(Math.max(50, Math.min(settings.pollMs, settings.leaseMs / 3)))),
      Effect.withTracerEnabled(false),
      Effect.interruptible,
      Effect.forkScoped
    )
    // Instances gone for a day are forgotten (their executions were taken long before).
    yield* Effect.ignore(sql`DELETE FROM workflow_instances WHERE heartbeat_at < now() - interval '1 day'`)

    const liveOwners = sql`SELECT i.id FROM workflow_instances i
      WHERE i.heartbeat_at > now() - make_interval(secs => ${settings.leaseMs / 1000})
        AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = ${LOCK_NAMESPACE} AND l.objid = CAST(i.lock_key AS oid))`
    return { instanceId, shared: true, liveOwners }
  })
