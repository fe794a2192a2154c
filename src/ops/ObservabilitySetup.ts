import { Context, Effect, Layer } from "effect"
import { resolve } from "node:path"
import { ExecutionFailed, ValidationError } from "../core/errors.js"
import { envValueProblem, writeEnvValues } from "./EnvFile.js"

export const PUBLIC_KEY_VARIABLE = "SERVICE_PUBLIC_KEY"
export const SECRET_KEY_VARIABLE = "SERVICE_SECRET_KEY"

export interface ObservabilityKeys {
  readonly publicKey: string
  readonly secretKey: string
}

export interface SetupResult {
  /** The env file written. */
  readonly file: string
  readonly keys: ReadonlyArray<string>
}

export class ObservabilitySetup extends Context.Tag("ObservabilitySetup")<ObservabilitySetup, {
  /** Writes the operations-platform keys into the env file, keeping its other lines. */
  readonly writeKeys: (keys: ObservabilityKeys) => Effect.Effect<SetupResult, ValidationError | ExecutionFailed>
}>() {}

/** The longest key written (operations platforms' keys are tens of characters). */
export const MAX_KEY_LENGTH = 1024

export const keyLengthProblem = (key: string): string | undefined =>
  key === ""
    ? "must not be empty"
    : key.length > MAX_KEY_LENGTH
    ? `must be at most ${MAX_KEY_LENGTH} characters`
    : undefined

// The API validates too; this guard keeps an embedding caller from injecting lines into the file.
const keyIssues = (keys: ObservabilityKeys) =>
  (["publicKey", "secretKey"] as const).flatMap((field) => {
    const problem = keyLengthProblem(keys[field]) ?? envValueProblem(keys[field])
    return problem === undefined ? [] : [{ path: [field], message: problem }]
  })

/** `envFile` defaults to `.env` in the working directory at start-up. */
export const ObservabilitySetupLive = (options: { readonly envFile?: string } = {}): Layer.Layer<ObservabilitySetup> =>
  Layer.effect(
    ObservabilitySetup,
    Effect.gen(function*() {
      const file = resolve(options.envFile ?? ".env")
      // Read-modify-write: two concurrent calls must not lose each other's lines.
      const lock = yield* Effect.makeSemaphore(1)
      const writeKeys = Effect.fn("ObservabilitySetup.writeKeys", { captureStackTrace: false })(
        function*(keys: ObservabilityKeys) {
          const issues = keyIssues(keys)
          if (issues.length > 0) return yield* ValidationError.fromIssues(issues)
          const values = [[PUBLIC_KEY_VARIABLE, keys.publicKey], [SECRET_KEY_VARIABLE, keys.secretKey]] as const
          yield* lock.withPermits(1)(writeEnvValues(file, values)).pipe(
            Effect.mapError((error) => new ExecutionFailed({ message: `Could not write ${file}: ${error.message}` }))
          )
          yield* Effect.logInfo(`Wrote ${PUBLIC_KEY_VARIABLE} and ${SECRET_KEY_VARIABLE} to ${file}`)
          return { file, keys: values.map(([key]) => key) }
        }
      )
      return ObservabilitySetup.of({ writeKeys })
    })
  )
