import { LogLevel } from "effect"

const LOG_LEVELS: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  silent: LogLevel.None
}

export type LogFormat = "pretty" | "logfmt" | "json"

/** LOG_FORMAT (pretty, logfmt, json); undefined (chosen by the terminal) when unset or unknown. */
export const parseLogFormat = (value: string | undefined): LogFormat | undefined => {
  const format = (value ?? "").toLowerCase()
  return format === "pretty" || format === "logfmt" || format === "json" ? format : undefined
}

/** LOG_LEVEL (trace, debug, info, warn, error, fatal, none); info when unset or unknown. */
export const parseLogLevel = (value: string | undefined): LogLevel.LogLevel =>
  LOG_LEVELS[(value ?? "").toLowerCase()] ?? LogLevel.Info
