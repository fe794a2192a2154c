import { Schema } from "effect"

/** A start-up failure that ends the process with `exitCode` and a one-line reason. */
export class StartupError extends Schema.TaggedError<StartupError>()("StartupError", {
  message: Schema.String,
  exitCode: Schema.Int
}) {}
