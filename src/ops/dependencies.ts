import { Data, Effect } from "effect"
import { readFile } from "node:fs/promises"
import { dirname, join } from "node:path"
import { messageOf } from "../core/errorMessages.js"

/** package.json could not be read; `message` says which file and why. */
export class DependenciesUnreadable extends Data.TaggedError("DependenciesUnreadable")<{ readonly message: string }> {}

export interface Dependency {
  readonly name: string
  /** The range package.json asks for, e.g. `^1.2.3`. */
  readonly range: string
}

const readJson = (path: string) =>
  Effect.tryPromise(() => readFile(path, "utf8").then((text) => JSON.parse(text) as unknown))

// Aliases (npm:), git, file, link, workspace and URL specs do not name a registry package of that name.
const fromRegistry = (range: string) => !/[:/]/.test(range)

interface Manifest {
  readonly dependencies?: Record<string, unknown>
  readonly peerDependencies?: Record<string, unknown>
}

/**
 * The project's runtime packages that come from the registry: `dependencies` and `peerDependencies`
 * (this package's Effect packages are peers, so an embedder shares one Effect; the service still runs
 * on them). devDependencies are not the service's.
 */
export const readDependencies = (
  projectDir: string
): Effect.Effect<ReadonlyArray<Dependency>, DependenciesUnreadable> =>
  readJson(join(projectDir, "package.json")).pipe(
    Effect.map((json) => {
      const manifest = json as Manifest
      const deps = { ...manifest.peerDependencies, ...manifest.dependencies }
      return Object.entries(deps).flatMap(([name, range]) =>
        typeof range === "string" && fromRegistry(range) ? [{ name, range }] : []
      )
    }),
    Effect.mapError((error) =>
      new DependenciesUnreadable({
        message: `Could not read ${join(projectDir, "package.json")}: ${messageOf(error.cause)}`
      })
    )
  )

/** The installed version, found the way Node resolves packages: node_modules here, then in each parent. */
export const installedVersion = (projectDir: string, name: string): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    for (let dir = projectDir;; dir = dirname(dir)) {
      const manifest = yield* Effect.option(readJson(join(dir, "node_modules", name, "package.json")))
      if (manifest._tag === "Some") {
        const version = (manifest.value as { version?: unknown }).version
        return typeof version === "string" ? version : undefined
      }
      if (dirname(dir) === dir) return undefined
    }
  })
