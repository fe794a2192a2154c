import { Effect, Either, ParseResult, Schema } from "effect"
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { makeJwtVerifier } from "../auth/Jwt.js"
import { ConfigFile, resolveServerConfig, type ServerConfigShape } from "./ServerConfig.js"

/** A start-up failure that ends the process with `exitCode` and a one-line reason. */
export class StartupError extends Schema.TaggedError<StartupError>()("StartupError", {
  message: Schema.String,
  exitCode: Schema.Int
}) {}

const usage = "usage: node dist/main.js [--port N] [--host H] [--config file.json]"

const invalid = (message: string) => new StartupError({ message, exitCode: 2 })

const readConfigFile = (path: string): Either.Either<ConfigFile, StartupError> => {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(path, "utf8"))
  } catch (error) {
    return Either.left(invalid(`Invalid config file ${path}: ${error instanceof Error ? error.message : String(error)}`))
  }
  return Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "error" })(raw).pipe(
    Either.mapLeft((error) => {
      const detail = ParseResult.ArrayFormatter.formatErrorSync(error)
        .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
        .join("; ")
      return invalid(`Invalid config file ${path}: ${detail}`)
    })
  )
}

/**
 * Command line > environment (DATABASE_URL, NODE_ENV) > config file > defaults.
 * The port never comes from PORT.
 */
export const loadConfig = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<ServerConfigShape, StartupError> =>
  Effect.gen(function*() {
    const { values } = yield* Effect.try({
      try: () =>
        parseArgs({
          args: [...argv],
          options: { port: { type: "string" }, host: { type: "string" }, config: { type: "string" } },
          strict: true,
          allowPositionals: false
        }),
      catch: (error) => invalid(`${error instanceof Error ? error.message : String(error)}\n${usage}`)
    })
    const file = values.config === undefined ? {} : yield* readConfigFile(values.config)
    let port = file.port
    if (values.port !== undefined) {
      port = Number(values.port)
      if (!/^\d+$/.test(values.port) || port > 65535) {
        return yield* invalid(`--port: must be an integer from 0 to 65535, got "${values.port}"`)
      }
    }
    const config = yield* Effect.try({
      try: () => resolveServerConfig({ ...file, port, host: values.host ?? file.host }, env),
      catch: (error) => invalid(error instanceof Error ? error.message : String(error))
    })
    if (config.auth.jwt !== undefined) {
      const jwt = config.auth.jwt
      yield* Effect.try({
        try: () => makeJwtVerifier(jwt),
        catch: (error) => invalid(`auth: ${error instanceof Error ? error.message : String(error)}`)
      })
    }
    return config
  })
