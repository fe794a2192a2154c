import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { join } from "node:path"
import { WorkingMemoryStore, WorkingMemoryStoreLive } from "../src/agents/workingMemory/WorkingMemoryStore.js"
import { DatabaseLive } from "../src/Database.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

const TRIALS = 200

/** Two writers with the same version, `TRIALS` times on the first write (insert) and on a later one (update): exactly one wins. */
const races = (url: string) =>
  Effect.gen(function*() {
    const store = yield* WorkingMemoryStore
    const wins = { first: 0, later: 0 }
    for (let trial = 0; trial < TRIALS; trial++) {
      const key = { agentId: "racer", scope: "conversation" as const, key: `conv-${trial}` }
      const first = yield* Effect.all([store.replace(key, `{"by":"a"}`, 0), store.replace(key, `{"by":"b"}`, 0)], {
        concurrency: 2
      })
      const firstWinners = first.filter((written) => !("_tag" in written))
      expect(firstWinners).toHaveLength(1)
      expect(first.find((written) => "_tag" in written)).toEqual({ _tag: "VersionConflict", currentVersion: 1 })
      wins.first += firstWinners.length
      const later = yield* Effect.all([store.replace(key, `{"by":"c"}`, 1), store.replace(key, `{"by":"d"}`, 1)], {
        concurrency: 2
      })
      const laterWinners = later.filter((written) => !("_tag" in written))
      expect(laterWinners).toHaveLength(1)
      wins.later += laterWinners.length
      const stored = Option.getOrThrow(yield* store.get(key))
      expect(stored.version).toBe(2)
      expect(["c", "d"]).toContain((stored.value as { by: string }).by)
    }
    expect(wins).toEqual({ first: TRIALS, later: TRIALS })
  }).pipe(Effect.provide(WorkingMemoryStoreLive.pipe(Layer.provide(DatabaseLive(url)))))

/** One record per owner under the same key; no owner (anonymous, or no authentication) is one owner too. */
const owners = (url: string) =>
  Effect.gen(function*() {
    const store = yield* WorkingMemoryStore
    const at = (owner?: { userId: string | null }) => ({
      agentId: "a",
      scope: "conversation" as const,
      key: "shared",
      owner
    })
    yield* store.replace(at({ userId: "alice" }), `{"who":"alice"}`, 0)
    yield* store.replace(at({ userId: "bob" }), `{"who":"bob"}`, 0)
    yield* store.replace(at({ userId: null }), `{"who":"anonymous"}`, 0)
    expect(yield* store.replace(at(), `{"who":"again"}`, 0)).toEqual({ _tag: "VersionConflict", currentVersion: 1 })
    expect(Option.map(yield* store.get(at({ userId: "alice" })), (row) => row.value)).toEqual(
      Option.some({ who: "alice" })
    )
    expect(Option.map(yield* store.get(at({ userId: "bob" })), (row) => row.value)).toEqual(Option.some({ who: "bob" }))
    expect(Option.map(yield* store.get(at()), (row) => row.value)).toEqual(Option.some({ who: "anonymous" }))
    expect(yield* store.get({ ...at({ userId: "alice" }), scope: "user" })).toEqual(Option.none())
    expect(yield* store.remove(at({ userId: "bob" }))).toBe(1)
    expect(yield* store.remove(at({ userId: "bob" }))).toBe(0)
    expect(Option.isSome(yield* store.get(at({ userId: "alice" })))).toBe(true)
  }).pipe(Effect.provide(WorkingMemoryStoreLive.pipe(Layer.provide(DatabaseLive(url)))))

describe("WorkingMemoryStore", () => {
  it.scoped(
    "conditional replacement: exactly one of two same-version writers wins, on SQLite",
    () => Effect.flatMap(tempDir, (dir) => races(`file:${join(dir, "wm.db")}`)),
    60_000
  )
  it.scoped.skipIf(!postgresAvailable)(
    "conditional replacement: exactly one of two same-version writers wins, on Postgres",
    () => Effect.flatMap(freshPostgresDatabase, races),
    60_000
  )
  it.scoped("records are per owner, on SQLite", () =>
    Effect.flatMap(tempDir, (dir) => owners(`file:${join(dir, "wm.db")}`)))
  it.scoped.skipIf(!postgresAvailable)(
    "records are per owner, on Postgres",
    () => Effect.flatMap(freshPostgresDatabase, owners)
  )
})
