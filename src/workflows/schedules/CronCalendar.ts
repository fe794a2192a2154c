import { type Cron, DateTime, Option } from "effect"

/**
 * The calendar side of a cron (issue #42, item 7): which days it can fire on, found by date arithmetic
 * so that Effect's `Cron.next`, which converts each step through the time zone and gives up only after
 * 10,000 steps (150-200 ms with a zone), is only ever asked to walk a day or two.
 */

const DAY_MS = 86_400_000
/** The most days each month has (February in a leap year). */
const MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const MONTH_NAMES = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December"
]
/** The Gregorian calendar repeats, weekdays included, every 400 years: a day not found in them never comes. */
export const CALENDAR_CYCLE_DAYS = 146_097
/** No offset from UTC is larger: a local day starts at most this long before the UTC day of the same date. */
const MAX_OFFSET_MS = 14 * 3_600_000

/**
 * Whether both day fields must match (one of them starts with a `*`, stepped or not) rather than either:
 * `Cron.parse` records it in a field its type marks internal (test/schedule-cron.test.ts compares with `Cron.next`).
 */
const conjunctive = (cron: Cron.Cron): boolean => Reflect.get(cron, "and") === true

/** Whether a day of month `day` and weekday `weekDay` match, as `Cron.match` reads the two fields. */
const dayMatches = (cron: Cron.Cron, day: number, weekDay: number) => {
  if (cron.days.size === 0 && cron.weekdays.size === 0) return true
  if (conjunctive(cron)) {
    return (cron.days.size === 0 || cron.days.has(day)) && (cron.weekdays.size === 0 || cron.weekdays.has(weekDay))
  }
  if (cron.weekdays.size === 0) return cron.days.has(day)
  if (cron.days.size === 0) return cron.weekdays.has(weekDay)
  return cron.days.has(day) || cron.weekdays.has(weekDay)
}

/**
 * The dates that do not exist that are all a cron's day-of-month and month fields can make (February 30
 * or 31, the 31st of April, June, September or November), named; undefined when some date exists or the
 * day-of-week field alone can fire it.
 */
export const impossibleDates = (cron: Cron.Cron): string | undefined => {
  if (cron.days.size === 0 || (cron.weekdays.size !== 0 && !conjunctive(cron))) return undefined
  const months = cron.months.size === 0 ? MONTH_DAYS.map((_, i) => i + 1) : [...cron.months]
  const days = [...cron.days]
  if (months.some((month) => days.some((day) => day <= MONTH_DAYS[month - 1]))) return undefined
  return months.map((month) => `${MONTH_NAMES[month - 1]} ${days.join(", ")}`).join("; ")
}

/** The latest time of day the cron names, as seconds since midnight. */
const latestSecond = (cron: Cron.Cron) => {
  const max = (values: ReadonlySet<number>, all: number) => (values.size === 0 ? all : Math.max(...values))
  return max(cron.hours, 23) * 3600 + max(cron.minutes, 59) * 60 + max(cron.seconds, 59)
}

/**
 * Where `Cron.next` may start walking to find the first fire time strictly after `after` without
 * passing a day it could fire on: `after` itself when its own day (in the cron's zone) may still fire,
 * else just before the first matching day within `days` days; undefined when none is.
 */
export const walkStart = (cron: Cron.Cron, after: number, days: number): number | undefined => {
  // Every day may fire: the walk is short already.
  if (cron.months.size === 0 && cron.days.size === 0) return after
  const parts = DateTime.toParts(DateTime.unsafeMakeZoned(after, { timeZone: Option.getOrUndefined(cron.tz) }))
  const today = Date.UTC(parts.year, parts.month - 1, parts.day)
  const secondOfDay = parts.hours * 3600 + parts.minutes * 60 + parts.seconds
  if (
    (cron.months.size === 0 || cron.months.has(parts.month)) && dayMatches(cron, parts.day, parts.weekDay) &&
    secondOfDay < latestSecond(cron)
  ) {
    return after
  }
  const last = today + days * DAY_MS
  let date = today + DAY_MS
  while (date <= last) {
    const at = new Date(date)
    if (cron.months.size !== 0 && !cron.months.has(at.getUTCMonth() + 1)) {
      date = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)
      continue
    }
    if (dayMatches(cron, at.getUTCDate(), at.getUTCDay())) return Math.max(after, date - MAX_OFFSET_MS - 1000)
    date += DAY_MS
  }
  return undefined
}
