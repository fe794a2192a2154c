import { Context, Duration, Effect, Fiber, Layer, Ref } from "effect"
import { existsSync } from "node:fs"
import { dirname, join, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { BadRequest, excerpt, ExecutionFailed } from "../core/errors.js"
import { installedVersion, readDependencies } from "./dependencies.js"
import { type InstallTarget, npmInstall } from "./npmInstall.js"
import { fetchLatest, resolveRegistry } from "./npmRegistry.js"
import { survey, toReport, unreachableMessage } from "./survey.js"
import type { InstallReport, UpdateReport } from "./UpdatesSchemas.js"

export type { DependencyUpdate, InstallReport, UpdateReport } from "./UpdatesSchemas.js"

export class Updates extends Context.Tag("Updates")<Updates, {
  /** The outdated direct dependencies (cached). */
  readonly check: Effect.Effect<UpdateReport, ExecutionFailed>
  /** Installs the latest version of one dependency, or of every outdated one when no name is given. */
  readonly install: (packageName: string | undefined) => Effect.Effect<InstallReport, BadRequest | ExecutionFailed>
}>() {}

export interface UpdatesOptions {
  /** Holds package.json and node_modules; default: this package's root. */
  readonly projectDir?: string
  /** Default: the registry npm is configured for. */
  readonly registry?: string
  /** Per registry request; default 5 s. */
  readonly timeoutMs?: number
  /** How long a check is reused; default 10 min. */
  readonly cacheMs?: number
  /** Default 5 min. */
  readonly installTimeoutMs?: number
}

/**
 * The package root: the nearest directory above this module with a package.json (src/ops in tests,
 * dist/ops for embedders, dist/ or dist/chunks/ in the bundled CLI).
 */
export const PACKAGE_ROOT = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir)
  return dir + sep
})()

const failed = (message: string) => new ExecutionFailed({ message })

const notADependency = (name: string) =>
  new BadRequest({ message: `Package ${excerpt(name)} is not a dependency of this service` })

export const UpdatesLive = (options: UpdatesOptions = {}): Layer.Layer<Updates> =>
  Layer.scoped(
    Updates,
    Effect.gen(function*() {
      const projectDir = options.projectDir ?? PACKAGE_ROOT
      const timeoutMs = options.timeoutMs ?? 5_000
      const cacheMs = options.cacheMs ?? 10 * 60_000
      const installTimeoutMs = options.installTimeoutMs ?? 5 * 60_000
      const scope = yield* Effect.scope
      const registry = yield* Effect.cached(resolveRegistry({ registry: options.registry, projectDir, timeoutMs }))
      const dependencies = readDependencies(projectDir).pipe(Effect.mapError((error) => failed(error.message)))

      const [cachedSurvey, invalidate] = yield* Effect.cachedInvalidateWithTTL(
        Effect.gen(function*() {
          return yield* survey(projectDir, yield* registry, yield* dependencies, timeoutMs)
        }),
        Duration.millis(cacheMs)
      )
      // A check that failed or found the registry unreachable is not kept, so that its recovery shows at once.
      const currentSurvey = cachedSurvey.pipe(
        Effect.tap((found) => found.unreachable === undefined ? Effect.void : invalidate),
        Effect.tapErrorCause(() => invalidate)
      )

      const check = currentSurvey.pipe(
        Effect.map(toReport),
        Effect.withSpan("Updates.check", { captureStackTrace: false })
      )

      const targetsOf = (packageName: string | undefined) =>
        Effect.gen(function*() {
          if (packageName === undefined) {
            yield* invalidate
            const found = yield* currentSurvey
            if (found.unreachable !== undefined) return yield* failed(unreachableMessage(found))
            return found.outdated
          }
          const dep = (yield* dependencies).find((candidate) => candidate.name === packageName)
          if (dep === undefined) return yield* notADependency(packageName)
          // Unknown latest: npm resolves `@latest` itself and reports what went wrong.
          const latest = yield* Effect.orElseSucceed(fetchLatest(yield* registry, dep.name, timeoutMs), () => undefined)
          return [{ ...dep, latest }]
        })

      const runInstall = (packageName: string | undefined, targets: ReadonlyArray<InstallTarget>) =>
        Effect.gen(function*() {
          const names = targets.map(({ name }) => name).join(" ")
          yield* Effect.logInfo(`Installing the latest ${names}`)
          const output = yield* npmInstall(targets, {
            projectDir,
            registry: yield* registry,
            timeoutMs: installTimeoutMs
          })
            .pipe(Effect.ensuring(invalidate))
          const installed = yield* Effect.forEach(targets, ({ name }) =>
            Effect.map(installedVersion(projectDir, name), (version) => ({ name, version: version ?? null })))
          const list = installed.map(({ name, version }) =>
            `${name}@${version}`
          ).join(", ")
          yield* Effect.logInfo(`Installed ${list}`)
          return { packageName: packageName ?? "all", installed, message: `Installed ${list}`, output }
        })

      // The install runs in the service's scope: a client that goes away does not stop npm half-way.
      const running = yield* Ref.make(false)
      const exclusive = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            if (yield* Ref.getAndSet(running, true)) {
              return yield* new BadRequest({ message: "An update is already running" })
            }
            // The fork would inherit this uninterruptible region: the time-out and shutdown must reach npm.
            const fiber = yield* Effect.forkIn(
              Effect.ensuring(Effect.interruptible(effect), Ref.set(running, false)),
              scope
            )
            return yield* restore(Fiber.join(fiber))
          })
        )

      const install = Effect.fn("Updates.install", { captureStackTrace: false })(
        function*(packageName: string | undefined) {
          yield* Effect.annotateCurrentSpan("package.name", packageName ?? "all")
          if (projectDir.split(sep).includes("node_modules")) {
            return yield* new BadRequest({
              message: "This service is installed as a dependency of another project; update it from that project"
            })
          }
          // Checked before the one-at-a-time guard, so a wrong name is always told so.
          if (packageName !== undefined && !(yield* dependencies).some((dep) => dep.name === packageName)) {
            return yield* notADependency(packageName)
          }
          return yield* exclusive(Effect.gen(function*() {
            const targets = yield* targetsOf(packageName)
            if (targets.length === 0) {
              return {
                packageName: "all",
                installed: [],
                message: "All dependencies are up to date; nothing to install",
                output: ""
              }
            }
            return yield* runInstall(packageName, targets)
          }))
        }
      )

      return Updates.of({ check, install })
    })
  )
