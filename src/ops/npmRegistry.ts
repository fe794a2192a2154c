import { Data, Effect } from "effect"
import { execFile } from "node:child_process"
import { messageOf } from "../core/errorMessages.js"

export const DEFAULT_REGISTRY = "https://registry.npmjs.org/"

/** No lookup reached the registry: a network error or no answer in time. */
export class RegistryUnreachable extends Data.TaggedError("RegistryUnreachable")<{ readonly reason: string }> {}

/** The registry answered, but not with a usable `dist-tags.latest` (unknown package, bad JSON, ...). */
export class LookupFailed extends Data.TaggedError("LookupFailed")<{ readonly reason: string }> {}

const withSlash = (url: string) => (url.endsWith("/") ? url : `${url}/`)

const asRegistryUrl = (text: string | undefined): string | undefined => {
  const trimmed = text?.trim()
  if (!trimmed) return undefined
  try {
    const url = new URL(trimmed)
    return url.protocol === "http:" || url.protocol === "https:" ? withSlash(url.href) : undefined
  } catch {
    return undefined
  }
}

const npmConfigRegistry = (cwd: string, timeoutMs: number) =>
  Effect.async<string | undefined>((resume) => {
    const child = execFile("npm", ["config", "get", "registry"], { cwd, timeout: timeoutMs }, (error, stdout) =>
      resume(Effect.succeed(error === null ? asRegistryUrl(stdout) : undefined)))
    return Effect.sync(() =>
      child.kill()
    )
  })

/**
 * The registry npm would use: the given one, else npm's environment variables, else what
 * `npm config get registry` says in the project (it reads the .npmrc files), else the public registry.
 */
export const resolveRegistry = (options: {
  readonly registry?: string
  readonly projectDir: string
  readonly timeoutMs: number
}): Effect.Effect<string> =>
  Effect.gen(function*() {
    const given = asRegistryUrl(options.registry) ??
      asRegistryUrl(process.env.npm_config_registry) ?? asRegistryUrl(process.env.NPM_CONFIG_REGISTRY)
    if (given !== undefined) return given
    return (yield* npmConfigRegistry(options.projectDir, options.timeoutMs)) ?? DEFAULT_REGISTRY
  })

/** Scoped names keep their `@` and encode the slash, as npm does: `@scope%2fname`. */
export const packumentUrl = (registry: string, name: string) => `${withSlash(registry)}${name.replace("/", "%2f")}`

const networkReason = (error: unknown, timeoutMs: number): string => {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${timeoutMs} ms`
  const cause = error instanceof Error ? error.cause : undefined
  if (cause instanceof Error) return cause.message
  return messageOf(error)
}

/** `dist-tags.latest` of a package, from its abbreviated packument. */
export const fetchLatest = Effect.fn("Updates.fetchLatest", { captureStackTrace: false })(
  function*(
    registry: string,
    name: string,
    timeoutMs: number
  ): Effect.fn.Return<string, RegistryUnreachable | LookupFailed> {
    yield* Effect.annotateCurrentSpan("package.name", name)
    const { body, status } = yield* Effect.tryPromise({
      try: (signal) =>
        fetch(packumentUrl(registry, name), {
          headers: { accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8" },
          signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
        }).then(async (response) => ({
          status: response.status,
          body: response.ok ? await response.json() : undefined
        })),
      catch: (error) =>
        error instanceof SyntaxError
          ? new LookupFailed({ reason: "the registry's answer is not JSON" })
          : new RegistryUnreachable({ reason: networkReason(error, timeoutMs) })
    })
    if (status !== 200) return yield* new LookupFailed({ reason: `HTTP ${status}` })
    const latest = (body as { "dist-tags"?: { latest?: unknown } } | undefined)?.["dist-tags"]?.latest
    if (typeof latest !== "string") return yield* new LookupFailed({ reason: "no dist-tags.latest" })
    return latest
  }
)
