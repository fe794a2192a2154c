import { SqlClient } from "@effect/sql"
import { Effect, Option, Queue, Schedule, type Scope, Stream } from "effect"
import { nextTurn } from "../../storage/batching.js"

/**
 * Notices between the instances sharing one Postgres store: "these executions changed" (events were
 * stored, or they were suspended, cancelled or taken) and "these were released" (an instance shutting
 * down gave them up). They carry ids only; the table stays the truth, and a lost notice is caught by
 * the supervisor's next poll. On SQLite (one instance) there is nobody to tell: both ends do nothing.
 */
export interface ExecutionNotices {
  /** Tells the others that the execution changed; never blocks (notices of one turn go out together). */
  readonly changed: (id: string) => void
  /** Tells the others, once sent, that these executions wait for an owner. */
  readonly released: (ids: ReadonlyArray<string>) => Effect.Effect<void>
  /** Notices from the other instances, for as long as the stream is read. */
  readonly incoming: Stream.Stream<Notice>
}

export interface Notice {
  readonly kind: "changed" | "released"
  readonly ids: ReadonlyArray<string>
}

const CHANNEL = "workflow_executions"
/** Postgres caps a payload at 8,000 bytes; ids are at most 128 ASCII characters. */
const MAX_PAYLOAD = 7_800
/** Ids waiting to be announced at most; past that the others learn by polling. */
const MAX_PENDING = 65_536

/** `from kind id,id,...` in payloads under Postgres's cap (instance and execution ids hold no spaces or commas). */
export const encodeNotices = (
  from: string,
  kind: Notice["kind"],
  ids: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const head = `${from} ${kind} `
  const payloads: Array<string> = []
  let current = ""
  for (const id of ids) {
    if (current !== "" && head.length + current.length + 1 + id.length > MAX_PAYLOAD) {
      payloads.push(head + current)
      current = ""
    }
    current = current === "" ? id : `${current},${id}`
  }
  if (current !== "") payloads.push(head + current)
  return payloads
}

/** A notice from another instance; none for this instance's own, or a payload it does not know. */
export const decodeNotice = (self: string, payload: string): Notice | undefined => {
  const parts = payload.split(" ")
  const [from, kind] = parts
  const ids = parts.at(2)
  if (from === self || ids === undefined || (kind !== "changed" && kind !== "released")) return undefined
  return { kind, ids: ids.split(",") }
}

const silent: ExecutionNotices = { changed: () => {}, released: () => Effect.void, incoming: Stream.never }

export const makeExecutionNotices = (
  instanceId: string
): Effect.Effect<ExecutionNotices, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) return silent
    // Loaded only on Postgres, where the driver is loaded already.
    const { PgClient } = yield* Effect.promise(() => import("@effect/sql-pg"))
    const pg = yield* Effect.serviceOption(PgClient.PgClient)
    if (pg._tag === "None") return silent

    const send = (kind: Notice["kind"], ids: ReadonlyArray<string>) =>
      Effect.forEach(encodeNotices(instanceId, kind, ids), (payload) => sql`SELECT pg_notify(${CHANNEL}, ${payload})`, {
        discard: true
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning("could not notify the other instances; they will poll", error)),
        Effect.withTracerEnabled(false)
      )

    const pending = yield* Queue.dropping<string>(MAX_PENDING)
    yield* Effect.gen(function*() {
      const first = yield* Queue.take(pending)
      yield* nextTurn
      const rest = yield* Queue.takeAll(pending)
      yield* send("changed", [...new Set([first, ...rest])])
    }).pipe(Effect.forever, Effect.interruptible, Effect.forkScoped)

    return {
      changed: (id) => {
        Queue.unsafeOffer(pending, id)
      },
      released: (ids) => send("released", ids),
      incoming: pg.value.listen(CHANNEL).pipe(
        Stream.filterMap((payload) => Option.fromNullable(decodeNotice(instanceId, payload))),
        Stream.tapError((error) =>
          Effect.logWarning("lost the notices of the other instances; listening again", error)
        ),
        Stream.retry(Schedule.spaced("1 second")),
        Stream.orDie
      )
    }
  })
