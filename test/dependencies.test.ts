import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { readDependencies } from "../src/ops/dependencies.js"

it.effect("the surveyed packages are the runtime dependencies and the peers, not the dev tools", () =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "deps-"))
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({
        dependencies: { jose: "^6.0.0", local: "file:../local" },
        peerDependencies: { effect: "^3.22.4" },
        devDependencies: { effect: "~3.22.4", vitest: "~3.2.4" }
      })
    )
    const found = yield* readDependencies(dir)
    expect([...found].sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: "effect", range: "^3.22.4" },
      { name: "jose", range: "^6.0.0" }
    ])
  }))
