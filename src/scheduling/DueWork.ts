import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Queue, Schedule, type Scope, Stream } from "effect"
import { ServerConfig } from "../config/ServerConfig.js"

/**
 * One scheduler for everything that falls due at a stored time (issue #31): workflow timers now;
 * approval expiry, schedule fires and webhook retries later. Each feature registers a kind: where its
 * earliest due time is (`nextDue`, read from an index on its own rows), how to take what is due
 * (`claimDue`: one conditional statement, owner and version fenced, so exactly one instance takes
 * each item) and what to do with it. The instance holds ONE timer, for the earliest due time it knows;
 * a kind that parks something sooner re-arms it (`parked`), and on Postgres so does a NOTIFY from
 * another instance; `pollMs` is the backstop. Due-ness is decided by the kinds' statements (the
 * database's clock on Postgres, the process clock on SQLite).
 */
export interface DueKind<A> {
  readonly name: string
  /** The earliest due time (epoch ms) of the kind's stored items; none when nothing waits. */
  readonly nextDue: Effect.Effect<Option.Option<number>>
  /** Takes at most `limit` items that are due now (conditional: an item is taken once). */
  readonly claimDue: (limit: number) => Effect.Effect<ReadonlyArray<A>>
  /** Runs a taken item (launched together with its claim, uninterruptibly: keep it short, fork long work). */
  readonly handle: (item: A) => Effect.Effect<void>
  /**
   * How long before its due time an item is taken (0 by default): `claimDue` takes what falls due within
   * it, and `handle` must not act before the item's time (a woken sleeper waits the rest in memory), so
   * the claim's cost is paid before the due time instead of after it.
   */
  readonly leadMs?: number | undefined
}

export interface DueWorkService {
  /** Registers a kind for as long as the scope lives; its first due time is read at once. */
  readonly register: <A>(kind: DueKind<A>) => Effect.Effect<void, never, Scope.Scope>
  /** An item of `kind` due at `at` (epoch ms) was stored here: re-arms the timer if sooner, and tells the other instances. */
  readonly parked: (kind: string, at: number) => Effect.Effect<void>
  /** When this instance's scheduler started (epoch ms): lateness counts from no earlier than this. */
  readonly readyAt: number
}

export class DueWork extends Context.Tag("DueWork")<DueWork, DueWorkService>() {}

const CHANNEL = "due_work"
/** Items claimed per statement. */
const CLAIM_BATCH = 100
/** The shortest wait after a round that found nothing due although its time had come (another clock, another claimer). */
const MIN_RETRY_MS = 20

interface Registered {
  readonly kind: DueKind<unknown>
  /** The earliest due time known of it. */
  next: number | undefined
}

/** When the timer should take a kind's next item: its due time less the kind's lead. */
const takeAt = (registered: Registered) =>
  registered.next === undefined ? Infinity : registered.next - (registered.kind.leadMs ?? 0)

/** `from kind at` (instance ids and kind names hold no spaces). */
const encode = (from: string, kind: string, at: number) => `${from} ${kind} ${at}`
const decode = (self: string, payload: string): { readonly kind: string; readonly at: number } | undefined => {
  const [from, kind, at] = payload.split(" ")
  const when = Number(at)
  return from === self || kind === undefined || !Number.isFinite(when) ? undefined : { kind, at: when }
}

export const makeDueWork = (options: { readonly instanceId: string; readonly pollMs: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const readyAt = Date.now()
    const kinds = new Map<string, Registered>()
    const rearm = yield* Queue.sliding<void>(1)
    const signal = () => Queue.unsafeOffer(rearm, undefined)

    const known = (name: string, at: number) => {
      const registered = kinds.get(name)
      if (registered === undefined) return
      if (registered.next === undefined || at < registered.next) {
        registered.next = at
        signal()
      }
    }

    const refresh = (registered: Registered) =>
      Effect.map(registered.kind.nextDue, (next) => {
        registered.next = Option.getOrUndefined(next)
      })

    /** Takes and handles what is due of one kind, batch after batch; whether anything was. */
    const runDue = (registered: Registered) =>
      Effect.gen(function*() {
        let any = false
        while (true) {
          const taken = yield* Effect.uninterruptible(Effect.tap(
            registered.kind.claimDue(CLAIM_BATCH),
            (items) => Effect.forEach(items, (item) => registered.kind.handle(item), { discard: true })
          ))
          any ||= taken.length > 0
          if (taken.length < CLAIM_BATCH) return any
        }
      })

    const survive = (what: string) => <A>(effect: Effect.Effect<A>) =>
      Effect.catchAllCause(
        effect,
        (cause) => Effect.logWarning(`due work: ${what} failed; the next round retries`, cause)
      )

    let idle = 0
    const round = Effect.gen(function*() {
      let dueButNone = false
      for (const registered of kinds.values()) {
        if (takeAt(registered) <= Date.now()) {
          const any = yield* survive(`claiming ${registered.kind.name}`)(runDue(registered))
          if (any !== true) dueButNone = true
        }
        yield* survive(`reading ${registered.kind.name}`)(refresh(registered))
      }
      idle = dueButNone ? idle + 1 : 0
      const earliest = Math.min(...Array.from(kinds.values(), takeAt))
      const wait = Math.min(options.pollMs, Math.max(0, earliest - Date.now()))
      return dueButNone ? Math.max(wait, Math.min(options.pollMs, MIN_RETRY_MS * 2 ** Math.min(idle, 6))) : wait
    })

    // The one timer: sleeps until the earliest due time (or the poll), or until re-armed.
    yield* Effect.gen(function*() {
      while (true) {
        const wait = yield* round
        yield* Effect.raceFirst(Effect.sleep(wait), Queue.take(rearm))
      }
    }).pipe(Effect.interruptible, Effect.forkScoped)

    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    let notify = (_kind: string, _at: number): Effect.Effect<void> => Effect.void
    if (pg) {
      const { PgClient } = yield* Effect.promise(() => import("@effect/sql-pg"))
      const client = yield* Effect.serviceOption(PgClient.PgClient)
      if (Option.isSome(client)) {
        notify = (kind, at) =>
          sql`SELECT pg_notify(${CHANNEL}, ${encode(options.instanceId, kind, at)})`.pipe(
            Effect.catchAll((error) =>
              Effect.logWarning("could not tell the other instances of a due time; they will poll", error)
            ),
            Effect.asVoid,
            Effect.withTracerEnabled(false)
          )
        yield* client.value.listen(CHANNEL).pipe(
          Stream.filterMap((payload) => Option.fromNullable(decode(options.instanceId, payload))),
          Stream.tapError((error) =>
            Effect.logWarning("lost the due-time notices of the other instances; listening again", error)
          ),
          Stream.retry(Schedule.spaced("1 second")),
          Stream.orDie,
          Stream.runForEach(({ at, kind }) => Effect.sync(() => known(kind, at))),
          Effect.interruptible,
          Effect.forkScoped
        )
      }
    }

    const service: DueWorkService = {
      register: (kind) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            kinds.set(kind.name, { kind: kind as DueKind<unknown>, next: Date.now() })
            signal()
          }),
          () => Effect.sync(() => kinds.delete(kind.name))
        ),
      parked: (kind, at) => Effect.zipRight(Effect.sync(() => known(kind, at)), notify(kind, at)),
      readyAt
    }
    return service
  })

/** The app's one scheduler (ServerConfig's instance id and poll). */
export const DueWorkLive = Layer.scoped(
  DueWork,
  Effect.flatMap(
    ServerConfig,
    (config) => makeDueWork({ instanceId: config.instanceId, pollMs: config.workflows.pollMs })
  )
)
