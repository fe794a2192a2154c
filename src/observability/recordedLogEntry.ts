import { Cause, Context, FiberRef, FiberRefs, HashMap, List, type Logger, type LogLevel, Option, Tracer } from "effect"
import type { LogEntry } from "./logTable.js"
import { type Budget, capString, jsonSize, LOG_ENTRY_CAP, recordedAttributes, redactQueries } from "./Redaction.js"

const levelName = (level: LogLevel.LogLevel): string =>
  ({
    All: "trace",
    Trace: "trace",
    Debug: "debug",
    Info: "info",
    Warning: "warn",
    Error: "error",
    Fatal: "fatal",
    None: "fatal"
  })[
    level._tag
  ]

const KNOWN = ["agentId", "workflowId", "executionId", "conversationId"] as const

/**
 * What is recorded of a log call, wherever it goes (the log store, its live feed, an OTLP collector):
 * redacted and capped like a span. `size` is what its text and attributes took of the cap, near enough.
 */
export const recordedLogEntry = (
  { annotations, cause, context, date, logLevel, message }: Logger.Logger.Options<unknown>,
  instance: string
): { readonly entry: LogEntry; readonly size: number } => {
  const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  const annotated: Record<string, unknown> = {}
  const known: Record<string, string> = {}
  for (const [key, value] of HashMap.toEntries(annotations)) {
    if ((KNOWN as ReadonlyArray<string>).includes(key)) known[key] = capString(String(value))
    else annotated[key] = value
  }
  if (!Cause.isEmpty(cause)) annotated.cause = Cause.pretty(cause)
  const text = List.isList(message)
    ? [...message].map(String).join(" ")
    : Array.isArray(message)
    ? message.map(String).join(" ")
    : String(message)
  const recordedMessage = capString(redactQueries(text))
  const budget: Budget = { left: LOG_ENTRY_CAP - jsonSize(recordedMessage) }
  const { attributes } = recordedAttributes(annotated, budget)
  const entry: LogEntry = {
    timestamp: date.toISOString(),
    level: levelName(logLevel),
    message: recordedMessage,
    instance,
    ...Option.match(span, { onNone: () => ({}), onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId }) }),
    ...known,
    attributes
  }
  return { entry, size: LOG_ENTRY_CAP - budget.left }
}
