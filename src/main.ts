#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Option } from "effect"
import { parseCommandLine } from "./cli.js"
import { StartupError } from "./config/StartupError.js"
import { exampleApp } from "./examples/app.js"
import { limitHeapGrowth } from "./ops/HeapGrowth.js"
import { IdleHeapLive } from "./ops/IdleHeap.js"
import { ServiceLive } from "./Service.js"

limitHeapGrowth()

const program = parseCommandLine(process.argv.slice(2), process.env).pipe(
  Effect.flatMap((line) =>
    line._tag === "Help"
      ? Console.log(line.text)
      // Unset LOG_FORMAT: pretty on a terminal, else logfmt (ServiceLive applies it).
      : Layer.launch(Layer.merge(
        ServiceLive(exampleApp, {
          ...line.config,
          logFormat: line.config.logFormat ?? (process.stdout.isTTY ? "pretty" : "logfmt")
        }),
        IdleHeapLive()
      ))
  ),
  Effect.catchTag("StorageError", (error) => new StartupError({ message: error.message, exitCode: 1 })),
  Effect.catchTag("DuplicateDefinition", (error) => new StartupError({ message: error.message, exitCode: 2 })),
  Effect.catchTag("InvalidJwtKey", (error) => new StartupError({ message: `auth: ${error.message}`, exitCode: 2 }))
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  // The console logger follows LOG_FORMAT (above).
  disablePrettyLogger: true,
  teardown: (exit, onExit) => {
    if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return onExit(0)
    const failure = Cause.failureOption(exit.cause).pipe(Option.filter((e) => e instanceof StartupError))
    if (Option.isSome(failure)) {
      process.stderr.write(`error: ${failure.value.message}\n`)
      return onExit(failure.value.exitCode)
    }
    process.stderr.write(`error: ${Cause.pretty(exit.cause)}\n`)
    onExit(1)
  }
})
