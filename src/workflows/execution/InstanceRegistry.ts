import { SqlClient, type Statement } from "@effect/sql"
import { Deferred, Effect, Schedule, type Scope } from "effect"
import { StorageError } from "../../storage/Sql.js"

/**
 * The instances sharing one store, as each sees the others. On Postgres each instance holds a session
 * advisory lock on its own key for as long as it lives (Postgres releases it the moment the
 * connection dies, so a killed instance is seen at once) and renews a heartbeat in
 * `workflow_instances` (the lease: an instance alive but stuck, or paused, stops renewing). An owner is
 * live while its lease is fresh AND it holds its lock, or it renewed less than `graceMs` ago: a
 * connection reset (a failover, `pg_terminate_backend`) releases the lock too, and the instance, still
 * renewing, takes it again on a new connection at once, so the others take none of its executions;
 * a killed one stops renewing and is seen dead `graceMs` after its last renewal. On SQLite there is
 * one instance: nobody else.
 */
export interface InstanceRegistry {
  readonly instanceId: string
  /** Whether other instances may share the store (Postgres). */
  readonly shared: boolean
  /** A query of the ids of the live instances, for claims (none on SQLite: every other owner is gone). */
  readonly liveOwners: Statement.Fragment | undefined
}

/** How often the lock's connection is checked, and its lock taken again once it died. */
const LOCK_CHECK_MS = 200
/** What the others allow, beyond a renewal interval, for an instance to renew after a reset. */
const LOCK_REGAIN_MS = 1_000
/** A renewal that failed, tried again: 50 ms doubling, four times (750 ms in all). */
const RENEWAL_RETRY = Schedule.exponential("50 millis").pipe(Schedule.intersect(Schedule.recurs(4)))

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

    /** Whether this instance's lock is held (by its lock connection), as any connection sees it. */
    const lockHeld = (lockKey: Statement.Fragment) =>
      sql`EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'
      AND l.granted AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ${LOCK_NAMESPACE} AND l.objid = CAST(${lockKey} AS oid))`

    /**
     * Holds the lock on a connection of its own until the scope closes, checking the connection every
     * LOCK_CHECK_MS; a connection that dies (its lock released with it) is replaced and the lock taken
     * again at once, well within the grace the others give it. Only the first take may find the lock
     * held by another process (a second instance with the same id); a later one retries, as the old
     * connection's backend may not have ended yet.
     */
    const holdLock = (locked: Deferred.Deferred<void, StorageError>) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const rows = yield* connection.executeValues(`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, ${key})`, [])
        if (rows.at(0)?.[0] !== true) {
          const taken = new StorageError({
            message:
              `Instance id ${instanceId} is held by a live instance: give each instance its own SERVICE_INSTANCE_ID`
          })
          if (yield* Deferred.fail(locked, taken)) return
          return yield* taken
        }
        yield* Effect.addFinalizer(() =>
          Effect.ignore(connection.executeValues(`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, ${key})`, []))
        )
        yield* Deferred.succeed(locked, undefined)
        yield* connection.executeValues("SELECT 1", []).pipe(Effect.repeat(Schedule.spaced(LOCK_CHECK_MS)))
      })).pipe(
        Effect.tapError((error) =>
          Effect.logWarning("lost the instance lock's connection; taking the lock again", error)
        ),
        Effect.retry(Schedule.spaced(LOCK_CHECK_MS)),
        Effect.withTracerEnabled(false)
      )

    const locked = yield* Deferred.make<void, StorageError>()
    yield* Effect.forkScoped(Effect.interruptible(Effect.orDie(holdLock(locked))))
    yield* Deferred.await(locked)

    const heartbeat = sql`INSERT INTO workflow_instances (id, lock_key, started_at, heartbeat_at)
      VALUES (${instanceId}, ${key}, now(), now())
      ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), lock_key = EXCLUDED.lock_key`
    const renewEveryMs = Math.max(50, Math.min(settings.pollMs, settings.leaseMs / 3))
    yield* heartbeat.pipe(
      Effect.mapError((error) => new StorageError({ message: `Cannot register the instance: ${error.message}` }))
    )
    yield* heartbeat.pipe(
      // A renewal cut by a connection reset is made again at once, well within the others' grace.
      Effect.retry(RENEWAL_RETRY),
      Effect.catchAll((error) => Effect.logWarning("could not renew the instance's lease", error)),
      Effect.repeat(Schedule.spaced(renewEveryMs)),
      Effect.withTracerEnabled(false),
      Effect.interruptible,
      Effect.forkScoped
    )
    // Instances gone for a day are forgotten (their executions were taken long before).
    yield* Effect.ignore(sql`DELETE FROM workflow_instances WHERE heartbeat_at < now() - interval '1 day'`)

    // The grace covers a renewal interval (the last one may have come just before the lock was lost)
    // and its retries: an instance still renewing is alive whatever happened to its lock's connection,
    // while one killed stops renewing and is seen dead this long after its last renewal.
    const graceMs = Math.min(settings.leaseMs, renewEveryMs + LOCK_REGAIN_MS)
    const liveOwners = sql`SELECT i.id FROM workflow_instances i
      WHERE i.heartbeat_at > now() - make_interval(secs => ${settings.leaseMs / 1000})
        AND (i.heartbeat_at > now() - make_interval(secs => ${graceMs / 1000}) OR ${lockHeld(sql`i.lock_key`)})`
    return { instanceId, shared: true, liveOwners }
  })
