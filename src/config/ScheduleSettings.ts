import { Either, Option, Schema } from "effect"
import { parsed } from "./env.js"

/** The largest input a schedule made through the API may store, as JSON (issue #42): 64 KiB. */
export const DEFAULT_SCHEDULE_INPUT_MAX_BYTES = 64 * 1024
/** A schedule's input above an execution's (1 MiB) would fail each firing. */
const SCHEDULE_INPUT_MAX_BYTES_LIMIT = 1024 * 1024

const MaxInputBytes = Schema.Int.pipe(
  Schema.between(1, SCHEDULE_INPUT_MAX_BYTES_LIMIT, { message: () => "must be an integer from 1 to 1048576" })
)

/** The `schedules` section of the config file. */
export const SchedulesConfigFile = Schema.Struct({
  /** A test setting (60): under 60 a cron may have a seconds field. */
  minIntervalSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
  maxInputBytes: Schema.optional(MaxInputBytes)
})
export type SchedulesConfigFile = typeof SchedulesConfigFile.Type

export interface ScheduleSettings {
  /** `schedules.minIntervalSeconds` (60): a test setting, see ScheduleCron.ts. */
  readonly minIntervalMs: number
  /** `schedules.maxInputBytes` or SCHEDULE_INPUT_MAX_BYTES (64 KiB): a create past it is a 400 naming the setting. */
  readonly maxInputBytes?: number | undefined
}

/** SCHEDULE_INPUT_MAX_BYTES; set but not an integer from 1 to 1 MiB fails start-up. */
export const scheduleInputMaxBytesFrom = parsed(
  "SCHEDULE_INPUT_MAX_BYTES",
  (raw) =>
    /^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= SCHEDULE_INPUT_MAX_BYTES_LIMIT
      ? Either.right(Number(raw))
      : Either.left(
        `SCHEDULE_INPUT_MAX_BYTES: must be an integer from 1 to ${SCHEDULE_INPUT_MAX_BYTES_LIMIT}, got "${raw}"`
      )
)

/** The settings from the config file's `schedules` and the environment (which wins). */
export const resolveScheduleSettings = (
  file: SchedulesConfigFile | undefined,
  maxInputBytes: Option.Option<number>
): ScheduleSettings => ({
  minIntervalMs: (file?.minIntervalSeconds ?? 60) * 1000,
  maxInputBytes: Option.getOrElse(maxInputBytes, () => file?.maxInputBytes ?? DEFAULT_SCHEDULE_INPUT_MAX_BYTES)
})
