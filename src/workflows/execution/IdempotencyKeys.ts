import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, Layer, Schedule } from "effect"
import { createHash } from "node:crypto"
import { ServerConfig } from "../../config/ServerConfig.js"
import { BadRequest, excerpt, UnprocessableEntity } from "../../core/errors.js"
import { committingStatements, storeCommitsOrInline } from "../../storage/StoreCommits.js"
import type { ExecuteRequest } from "../api/WorkflowSchemas.js"
import { ExecutionStore } from "./ExecutionStore.js"

/** The routes that start executions; a key of one is independent of the same key on another. */
export type StartRoute = "execute" | "run" | "stream" | "replay" | "restart"

/** Where a key is unique: the route, the workflow and the caller. */
export interface KeyScope {
  readonly route: StartRoute
  readonly workflowId: string
  /** Who asks (see `callerOf`). */
  readonly caller: string
  readonly key: string
}

export interface Claimed {
  /** The execution the key stands for. */
  readonly executionId: string
  /** Whether this request stored the key (else it is a retry of the request that did). */
  readonly fresh: boolean
}

/** JSON with every object's keys sorted, so two bodies that differ only in key order are equal. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, field: unknown) =>
    field !== null && typeof field === "object" && !Array.isArray(field)
      ? Object.fromEntries(
        Object.entries(field as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      )
      : field)

export const requestHash = (request: unknown): string =>
  createHash("sha256").update(canonicalJson(request)).digest("hex")

/**
 * The caller a key belongs to: "" when anonymous (all anonymous callers share one scope), else the
 * JWT subject (`sub`, or `id` for a mapped user), else a hash of the whole user.
 */
export const callerOf = (user: unknown): string => {
  if (user === null || user === undefined) return ""
  if (typeof user === "object") {
    const { id, sub } = user as { readonly sub?: unknown; readonly id?: unknown }
    if (typeof sub === "string" || typeof sub === "number") return `sub:${sub}`
    if (typeof id === "string" || typeof id === "number") return `id:${id}`
  }
  return `user:${createHash("sha256").update(canonicalJson(user)).digest("hex")}`
}

/** Expired keys are deleted this many at a time, so pruning never holds the table for long. */
const PRUNE_BATCH = 500

/**
 * Idempotency-Keys of workflow starts. A key row is claimed with a conditional insert, so of any
 * number of concurrent requests with one key exactly one stores it; it holds the execution id chosen
 * before the execution exists, so every request that finds the key (the first one, a retry, a request
 * after a crash between the two writes) creates or joins that one execution, and never another.
 * An expired key counts as new; expired rows are pruned in the background.
 */
export class IdempotencyKeys extends Context.Tag("IdempotencyKeys")<IdempotencyKeys, {
  /**
   * Stores the key for `executionId` unless it is held; a held key answers with its execution, or 422
   * when it was stored for another body.
   */
  readonly claim: (scope: KeyScope, hash: string, executionId: string) => Effect.Effect<Claimed, UnprocessableEntity>
  /** Forgets the key when it stands for `executionId`. */
  readonly release: (scope: KeyScope, executionId: string) => Effect.Effect<void>
  /**
   * What the engine asks of a keyed start once the request is valid: the execution id to use for the
   * one it would start as `executionId`. A fresh key with an id the client chose that another
   * execution already has is 400, as without a key, and the key is not kept.
   */
  readonly forStart: (
    scope: KeyScope,
    request: ExecuteRequest
  ) => (executionId: string) => Effect.Effect<string, BadRequest | UnprocessableEntity>
  /**
   * A keyed replay or restart (issue #33): the id of the execution the key stands for (`executionId` when
   * it is fresh); `request` is what the key's body is compared by (the original's id with the body).
   */
  readonly forReplay: (
    scope: KeyScope,
    request: unknown
  ) => (executionId: string) => Effect.Effect<string, UnprocessableEntity>
  /** Deletes expired keys, a batch at a time; the number deleted. */
  readonly prune: Effect.Effect<number>
}>() {}

export const IdempotencyKeysLive = Layer.scoped(
  IdempotencyKeys,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The key's writes go through the stores' commits (on SQLite, the commit thread): a write on the
    // service's own connection would wait for the lock on the event loop while that thread holds it.
    const commit = committingStatements(yield* storeCommitsOrInline)
    const store = yield* ExecutionStore
    const ttlMs = (yield* ServerConfig).workflows.idempotencyTtlMs

    const inScope = (scope: KeyScope) =>
      sql`route = ${scope.route} AND workflow_id = ${scope.workflowId} AND caller = ${scope.caller}
        AND idempotency_key = ${scope.key}`

    const insert = (scope: KeyScope, hash: string, executionId: string, at: Date) =>
      commit(sql<{ execution_id: string }>`INSERT INTO workflow_idempotency_keys ${
        sql.insert({
          route: scope.route,
          workflow_id: scope.workflowId,
          caller: scope.caller,
          idempotency_key: scope.key,
          request_hash: hash,
          execution_id: executionId,
          created_at: at.toISOString(),
          expires_at: new Date(at.getTime() + ttlMs).toISOString()
        })
      } ON CONFLICT (route, workflow_id, caller, idempotency_key) DO NOTHING RETURNING execution_id`)

    /** Takes over an expired key: one of concurrent takers matches it while it is still expired. */
    const renew = (scope: KeyScope, hash: string, executionId: string, at: Date) =>
      commit(
        sql<
          { execution_id: string }
        >`UPDATE workflow_idempotency_keys SET request_hash = ${hash}, execution_id = ${executionId},
        created_at = ${at.toISOString()}, expires_at = ${new Date(at.getTime() + ttlMs).toISOString()}
        WHERE ${inScope(scope)} AND expires_at <= ${at.toISOString()} RETURNING execution_id`
      )

    const held = (scope: KeyScope) =>
      sql<
        { request_hash: string; execution_id: string; expires_at: string }
      >`SELECT request_hash, execution_id, expires_at
        FROM workflow_idempotency_keys WHERE ${inScope(scope)}`

    const otherBody = (scope: KeyScope) =>
      new UnprocessableEntity({
        message: `Idempotency-Key "${excerpt(scope.key, 60)}" was already used with another request body ` +
          `(POST /workflows/${excerpt(scope.workflowId, 60)}/${
            scope.route === "replay" || scope.route === "restart" ? `executions/…/${scope.route}` : scope.route
          }): ` +
          "use a new key for a new request"
      })

    const claim = Effect.fn("IdempotencyKeys.claim", { captureStackTrace: false })(
      function*(
        scope: KeyScope,
        hash: string,
        executionId: string
      ): Effect.fn.Return<Claimed, UnprocessableEntity | SqlError.SqlError> {
        yield* Effect.annotateCurrentSpan("idempotency.route", scope.route)
        // Each turn either settles or sees the row change under it (deleted or renewed meanwhile), so
        // the loop ends as soon as writers stop racing on this one key.
        for (;;) {
          const at = new Date()
          if ((yield* insert(scope, hash, executionId, at)).length > 0) return { executionId, fresh: true }
          const row = (yield* held(scope)).at(0)
          if (row === undefined) continue
          if (row.expires_at <= at.toISOString()) {
            if ((yield* renew(scope, hash, executionId, at)).length > 0) return { executionId, fresh: true }
            continue
          }
          if (row.request_hash !== hash) return yield* otherBody(scope)
          return { executionId: row.execution_id, fresh: false }
        }
      },
      Effect.catchTag("SqlError", Effect.die)
    )

    const release = (scope: KeyScope, executionId: string) =>
      commit(sql`DELETE FROM workflow_idempotency_keys WHERE ${inScope(scope)} AND execution_id = ${executionId}`).pipe(
        Effect.asVoid
      )

    const forStart = (scope: KeyScope, request: ExecuteRequest) => (executionId: string) =>
      Effect.gen(function*() {
        // Read before the claim: an execution stored after it may be a concurrent retry's, under this key.
        const takenBefore = request.options?.executionId !== undefined && (yield* store.exists(executionId))
        const claimed = yield* claim(scope, requestHash(request), executionId)
        if (claimed.fresh && takenBefore) {
          yield* release(scope, claimed.executionId)
          return yield* new BadRequest({ message: `Execution ${claimed.executionId} already exists` })
        }
        return claimed.executionId
      })

    const pruneBatch = Effect.suspend(() =>
      sql<{ route: string }>`DELETE FROM workflow_idempotency_keys
        WHERE (route, workflow_id, caller, idempotency_key) IN (
          SELECT route, workflow_id, caller, idempotency_key FROM workflow_idempotency_keys
          WHERE expires_at <= ${new Date().toISOString()} LIMIT ${PRUNE_BATCH}
        ) RETURNING route`
    ).pipe(Effect.map((rows) => rows.length), Effect.orDie)

    const prune = Effect.gen(function*() {
      let total = 0
      for (;;) {
        const deleted = yield* pruneBatch
        total += deleted
        if (deleted < PRUNE_BATCH) return total
        yield* Effect.sleep("10 millis")
      }
    })

    yield* prune.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("could not prune idempotency keys", cause)),
      Effect.repeat(Schedule.spaced(Math.min(60_000, Math.max(1_000, ttlMs)))),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )

    const forReplay = (scope: KeyScope, request: unknown) => (executionId: string) =>
      Effect.map(claim(scope, requestHash(request), executionId), (claimed) => claimed.executionId)

    return IdempotencyKeys.of({ claim, release, forStart, forReplay, prune })
  })
)
