import { Context, Effect, FiberRef, FiberRefs, HashMap, HashSet, Layer, Logger, Tracer } from "effect"

/**
 * The logger with `trace_id` and `span_id` annotations on every line logged inside a span, so a log
 * pipeline reading the console (an OpenTelemetry Collector, Loki, ...) can join lines to their traces.
 */
export const withTraceIds = <Message, Output>(logger: Logger.Logger<Message, Output>): Logger.Logger<Message, Output> =>
  Logger.make((options) => {
    const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
    if (span._tag === "None") return logger.log(options)
    const annotations = HashMap.set(HashMap.set(options.annotations, "trace_id", span.value.traceId), "span_id", span.value.spanId)
    return logger.log({ ...options, annotations })
  })

// Effect's console loggers: the default one, and the pretty one NodeRuntime.runMain installs.
const consoleLoggers: ReadonlyArray<readonly [Logger.Logger<unknown, void>, Logger.Logger<unknown, void>]> = [
  [Logger.defaultLogger, withTraceIds(Logger.defaultLogger)],
  [Logger.prettyLoggerDefault, withTraceIds(Logger.prettyLoggerDefault)]
]

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
