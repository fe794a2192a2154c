import { Cron, Either } from "effect"
import { DEFAULT_SCHEDULE_INPUT_MAX_BYTES } from "../../config/ScheduleSettings.js"
import type { ServerConfigShape } from "../../config/ServerConfig.js"
import { CALENDAR_CYCLE_DAYS, impossibleDates, walkStart } from "./CronCalendar.js"

/**
 * The shortest interval a schedule's cron may have: 60 s, unless `schedules.minIntervalSeconds` (a test
 * setting) lowers it; under a minute a cron may also have a seconds field, so a test fires every second.
 */
export const scheduleMinIntervalMs = (config: ServerConfigShape) => config.schedules?.minIntervalMs ?? 60_000

/** The largest input a schedule made through the API may store, as JSON: `schedules.maxInputBytes` (64 KiB). */
export const scheduleMaxInputBytes = (config: ServerConfigShape) =>
  config.schedules?.maxInputBytes ?? DEFAULT_SCHEDULE_INPUT_MAX_BYTES

/** `catchUp: "all"` fires at most this many missed times; older ones are skipped. */
export const CATCH_UP_MAX = 100
/** Cron lookups per computation at most (a schedule due long ago under "all" walks forward). */
const WALK_MAX = 100_000

export type CatchUp = "none" | "latest" | "all"

export interface ScheduleTiming {
  readonly cron: string
  readonly timezone?: string | undefined
  readonly catchUp: CatchUp
}

/** A schedule must fire within this many years of when it is made (or its cron is a 400 naming them). */
export const FIRE_HORIZON_YEARS = 8
const HORIZON_DAYS = Math.ceil(FIRE_HORIZON_YEARS * 365.25)

/**
 * The cron expression with its time zone, or why not (a message naming the field). Five fields; a
 * seconds field only when the minimum interval is under a minute (a test setting). Dates that cannot
 * exist are refused before any walk, then it must fire within FIRE_HORIZON_YEARS, and not more often
 * than `minIntervalMs` (checked over its next 50 times within the horizon, walked in UTC: a zone's
 * offset changes move a minute-grained gap by at most an hour, never under a minute, and each step
 * through a zone costs a conversion).
 */
export const parseCron = (
  cron: string,
  timezone: string | undefined,
  minIntervalMs: number,
  now = Date.now()
): Either.Either<Cron.Cron, string> => {
  const fields = cron.trim().split(/\s+/).length
  const allowed = minIntervalMs < 60_000 ? [5, 6] : [5]
  if (!allowed.includes(fields)) {
    return Either.left(
      `cron "${cron}" must have 5 fields (minute hour day-of-month month day-of-week); it has ${fields}`
    )
  }
  if (timezone !== undefined) {
    const zone = Cron.parse("* * * * *", timezone)
    if (Either.isLeft(zone)) return Either.left(`timezone "${timezone}" is not a known IANA time zone`)
  }
  const parsed = Cron.parse(cron, timezone)
  if (Either.isLeft(parsed)) return Either.left(`cron "${cron}" is invalid: ${parsed.left.message}`)
  const impossible = impossibleDates(parsed.right)
  if (impossible !== undefined) {
    return Either.left(
      `cron "${cron}" never fires: its day-of-month and month only make dates that do not exist (${impossible})`
    )
  }
  // Cron.next throws when its walk finds nothing in 10,000 steps; its start makes that a day or two.
  try {
    return boundedCron(cron, parsed.right, minIntervalMs, now)
  } catch {
    return Either.left(`cron "${cron}" never fires`)
  }
}

/** Fires within the horizon, and not more often than `minIntervalMs` (see parseCron). */
const boundedCron = (
  cron: string,
  parsed: Cron.Cron,
  minIntervalMs: number,
  now: number
): Either.Either<Cron.Cron, string> => {
  if (nextFireWithin(parsed, now, HORIZON_DAYS) === undefined) {
    return Either.left(
      `cron "${cron}" does not fire within ${FIRE_HORIZON_YEARS} years, the horizon a schedule's next fire time is looked for in`
    )
  }
  const utc = Either.getOrThrow(Cron.parse(cron, "UTC"))
  const end = now + HORIZON_DAYS * 86_400_000
  let at = nextFireWithin(utc, now, HORIZON_DAYS)
  for (let i = 0; i < 50 && at !== undefined && at < end; i++) {
    const following = nextFireWithin(utc, at, HORIZON_DAYS)
    if (following === undefined) break
    if (following - at < minIntervalMs) {
      return Either.left(`cron "${cron}" fires more often than every ${minIntervalMs / 1000} s, the minimum interval`)
    }
    at = following
  }
  return Either.right(parsed)
}

/** The first time strictly after `after` within `days` days, or none; `Cron.next` walks a day or two at most. */
export const nextFireWithin = (cron: Cron.Cron, after: number, days: number): number | undefined => {
  const start = walkStart(cron, after, days)
  return start === undefined ? undefined : Cron.next(cron, new Date(start)).getTime()
}

/** The first time strictly after `after` (a cron that parseCron took always has one). */
export const nextFire = (cron: Cron.Cron, after: number): number => {
  const next = nextFireWithin(cron, after, CALENDAR_CYCLE_DAYS)
  if (next === undefined) throw new Error("The cron never fires")
  return next
}

/**
 * What a firing of the stored due time `due` does at `now`: the time it fires for (none: skipped) and
 * the next due time. "none" fires `due` only when its next time has not come yet (a missed time is
 * skipped); "latest" fires the last time at or before `now`; "all" fires each missed time in turn, at
 * most the last CATCH_UP_MAX of them.
 */
export const firing = (
  cron: Cron.Cron,
  catchUp: CatchUp,
  due: number,
  now: number
): { readonly fire: number | undefined; readonly next: number } => {
  const after = nextFire(cron, due)
  if (after > now) return { fire: due, next: after }
  if (catchUp === "none") return { fire: undefined, next: nextFire(cron, now) }
  // The missed times up to now, the last CATCH_UP_MAX kept.
  const recent: Array<number> = [due]
  let at = due
  for (let i = 0; i < WALK_MAX; i++) {
    const following = nextFire(cron, at)
    if (following > now) break
    recent.push(following)
    if (recent.length > CATCH_UP_MAX) recent.shift()
    at = following
  }
  if (catchUp === "latest") return { fire: recent[recent.length - 1], next: nextFire(cron, recent[recent.length - 1]) }
  return { fire: recent[0], next: nextFire(cron, recent[0]) }
}
