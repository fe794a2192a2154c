import { Cause, Chunk, Effect, Logger } from "effect"

/** A logged cause as text, with what each failure was caused by (a WorkerError's exit code is there). */
const causeText = (cause: Cause.Cause<unknown>) =>
  Chunk.toReadonlyArray(Cause.failures(cause)).map((failure) => {
    const inner = failure instanceof Error && failure.cause instanceof Error ? `: ${failure.cause.message}` : ""
    return `${String(failure)}${inner}`
  }).join("; ")

/**
 * Runs a test that kills a writer thread on purpose. @effect/platform's worker pool reports the death
 * as a warning (a `WorkerError`, "exited with code 1", with its stack) before it starts a new thread:
 * expected here, so it is collected instead of printed, and the test checks the death was reported,
 * and nothing else was.
 */
export const expectingThreadDeath = <A, E, R>(test: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const logged: Array<{ readonly level: string; readonly text: string }> = []
    const collect = Logger.make(({ cause, logLevel, message }) => {
      logged.push({ level: logLevel.label, text: `${String(message)} ${causeText(cause)}` })
    })
    const result = yield* Effect.provide(test, Logger.replace(Logger.defaultLogger, collect))
    const warnings = logged.filter(({ level }) => level !== "DEBUG" && level !== "TRACE" && level !== "INFO")
    if (
      warnings.length === 0 ||
      !warnings.every(({ level, text }) => level === "WARN" && /WorkerError.*: exited with code 1/.test(text))
    ) {
      return yield* Effect.die(
        new Error(
          `expected the killed thread's death reported as a warning, and nothing else; logged: ${
            JSON.stringify(logged)
          }`
        )
      )
    }
    return result
  })
