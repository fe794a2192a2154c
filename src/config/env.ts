import { Config, ConfigError, ConfigProvider, Effect, Either, Option, type Redacted } from "effect"

/** The environment as the command line passes it (process.env, or a test's record). */
export type Env = Readonly<Record<string, string | undefined>>

/** A variable's text; none when unset. */
export const variable = (name: string): Config.Config<Option.Option<string>> => Config.option(Config.string(name))

/** A secret variable, held as Redacted from the moment it is read; none when unset. */
export const secret = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.redacted(name))

/** A variable read by `parse` (none when unset or empty); a failure names the variable. */
export const parsed = <A>(
  name: string,
  parse: (raw: string) => Either.Either<A, string>
): Config.Config<Option.Option<A>> =>
  Config.mapOrFail(variable(name), (raw) =>
    Option.isNone(raw) || raw.value === ""
      ? Either.right(Option.none())
      : Either.match(parse(raw.value), {
        onLeft: (message) => Either.left(ConfigError.InvalidData([name], message)),
        onRight: (value) => Either.right(Option.some(value))
      }))

/** Fails a Config with a message (which names the variable it is about). */
export const invalid = (name: string, message: string) => Either.left(ConfigError.InvalidData([name], message))

const firstMessage = (error: ConfigError.ConfigError): string => {
  switch (error._op) {
    case "And":
    case "Or":
      return firstMessage(error.left)
    default:
      return error.message
  }
}

/** Reads `config` from an environment record: its value, or the first failure's message. */
export const readEnv = <A>(config: Config.Config<A>, env: Env): Either.Either<A, string> => {
  const variables = new Map(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined))
  return Effect.runSync(
    Effect.either(Effect.withConfigProvider(config, ConfigProvider.fromMap(variables))).pipe(
      Effect.map(Either.mapLeft(firstMessage))
    )
  )
}
