import { Context, Effect, FiberRef, FiberRefs, HashMap, HashSet, Layer, Logger, type LogLevel, Tracer } from "effect"
import type { LogFormat } from "../config/ServerConfig.js"

/**
 * The logger with `trace_id` and `span_id` annotations on every line logged inside a span, so a log
 * pipeline reading the console (an OpenTelemetry Collector, Loki, ...) can join lines to their traces.
 */
export const withTraceIds = <Message, Output>(logger: Logger.Logger<Message, Output>): Logger.Logger<Message, Output> =>
  Logger.make((options) => {
    const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
    if (span._tag === "None") return logger.log(options)
    const annotations = HashMap.set(
      HashMap.set(options.annotations, "trace_id", span.value.traceId),
      "span_id",
      span.value.spanId
    )
    return logger.log({ ...options, annotations })
  })

/**
 * The console loggers of each LOG_FORMAT (`node dist/main.js` installs one): the pretty one is the one
 * NodeRuntime.runMain installs, a write per annotation; logfmt and json write one line per entry, what a
 * log collector splits on, for a fraction of the pretty one's cost.
 */
export const consoleLoggerOf: Record<"pretty" | "logfmt" | "json", Logger.Logger<unknown, void>> = {
  pretty: Logger.prettyLoggerDefault,
  logfmt: Logger.withConsoleLog(Logger.logfmtLogger),
  json: Logger.withConsoleLog(Logger.jsonLogger)
}

// Effect's console loggers: the default one, and those above.
const consoleLoggers: ReadonlyArray<readonly [Logger.Logger<unknown, void>, Logger.Logger<unknown, void>]> = [
  Logger.defaultLogger,
  ...Object.values(consoleLoggerOf)
].map((logger) => [logger, withTraceIds(logger)] as const)

/**
 * Effect's console loggers, where installed, replaced by the same loggers with trace ids. A logger
 * put in their place (an embedder's, a test's capture) is left alone.
 */
export const ConsoleTraceIdsLive: Layer.Layer<never> = Layer.scopedDiscard(
  Effect.locallyScopedWith(FiberRef.currentLoggers, (loggers) => {
    let replaced = loggers
    for (const [plain, traced] of consoleLoggers) {
      if (HashSet.has(replaced, plain)) replaced = HashSet.add(HashSet.remove(replaced, plain), traced)
    }
    return replaced
  })
)

/**
 * LOG_FORMAT and LOG_LEVEL, for whoever builds the services (`node dist/main.js`, or an embedder's
 * program: ServicesLive includes it). The format replaces Effect's console loggers where installed (the
 * default one, or the pretty one NodeRuntime.runMain installs), with trace ids; unset, they are left
 * as they are. A logger put in their place (an embedder's, a test's capture) is left alone.
 */
export const ConsoleLoggingLive = (
  options: { readonly format?: LogFormat | undefined; readonly level: LogLevel.LogLevel }
): Layer.Layer<never> => {
  const level = Logger.minimumLogLevel(options.level)
  if (options.format === undefined) return level
  const chosen = consoleLoggers.find(([plain]) => plain === consoleLoggerOf[options.format!])![1]
  const format = Layer.scopedDiscard(
    Effect.locallyScopedWith(FiberRef.currentLoggers, (loggers) => {
      let replaced = loggers
      for (const pair of consoleLoggers) for (const logger of pair) replaced = HashSet.remove(replaced, logger)
      return HashSet.size(replaced) === HashSet.size(loggers) ? loggers : HashSet.add(replaced, chosen)
    })
  )
  return Layer.merge(level, format)
}
