import { Effect, Either } from "effect"
import { type Dependency, installedVersion } from "./dependencies.js"
import { fetchLatest } from "./npmRegistry.js"
import { updateType } from "./semver.js"
import type { DependencyUpdate, UpdateReport } from "./UpdatesSchemas.js"

/** What the registry said about the installed dependencies. */
export interface Survey {
  readonly registry: string
  readonly outdated: ReadonlyArray<DependencyUpdate & { readonly range: string }>
  /** Installed dependencies whose latest version could not be learnt. */
  readonly unchecked: ReadonlyArray<string>
  /** Set when no lookup reached the registry. */
  readonly unreachable: string | undefined
}

const CONCURRENCY = 8

/**
 * Looks up the latest version of every installed dependency (one not installed has nothing to compare
 * with and is left out). Once a lookup finds the registry unreachable before any has reached it, the
 * rest are not tried, so a registry that is down costs one time-out, not one per dependency.
 */
export const survey = (
  projectDir: string,
  registry: string,
  deps: ReadonlyArray<Dependency>,
  timeoutMs: number
): Effect.Effect<Survey> =>
  Effect.gen(function*() {
    let reached = false
    let unreachable: string | undefined
    const results = yield* Effect.forEach(deps, (dep) =>
      Effect.gen(function*() {
        const installed = yield* installedVersion(projectDir, dep.name)
        if (installed === undefined) return undefined
        if (unreachable !== undefined && !reached) return { dep, installed, latest: undefined }
        const latest = yield* Effect.either(fetchLatest(registry, dep.name, timeoutMs))
        if (Either.isRight(latest)) reached = true
        else if (latest.left._tag === "RegistryUnreachable") unreachable ??= latest.left.reason
        return { dep, installed, latest: Either.getOrUndefined(latest) }
      }), { concurrency: CONCURRENCY })
    const looked = results.filter((result) => result !== undefined)
    const outdated = looked.flatMap(({ dep, installed, latest }) => {
      const type = latest === undefined ? undefined : updateType(installed, latest)
      return type === undefined ? [] : [{ name: dep.name, range: dep.range, installed, latest: latest!, type }]
    })
    return {
      registry,
      outdated,
      unchecked: looked.filter((result) => result.latest === undefined).map((result) => result.dep.name),
      unreachable: reached ? undefined : unreachable
    }
  })

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

const uncheckedNote = (names: ReadonlyArray<string>) =>
  names.length === 0
    ? ""
    : `; could not check ${plural(names.length, "package")}: ${names.slice(0, 10).join(", ")}${
      names.length > 10 ? ", ..." : ""
    }`

export const unreachableMessage = (survey: Survey) =>
  `Could not reach the npm registry at ${survey.registry}: ${survey.unreachable}`

export const toReport = (survey: Survey): UpdateReport => {
  if (survey.unreachable !== undefined) {
    return { hasUpdates: false, updates: [], count: 0, message: unreachableMessage(survey) }
  }
  const updates = survey.outdated.map(({ installed, latest, name, type }) => ({ name, installed, latest, type }))
  const head = updates.length > 0
    ? `${plural(updates.length, "update")} available`
    : survey.unchecked.length > 0
    ? "No updates found"
    : "All dependencies are up to date"
  return {
    hasUpdates: updates.length > 0,
    updates,
    count: updates.length,
    message: head + uncheckedNote(survey.unchecked)
  }
}
