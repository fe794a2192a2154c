import { describe, expect, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { begin, end, staleReason } from "../scripts/build-stamp.mjs"

// `npm start` builds only when an input changed (scripts/build-stamp.mjs), checked on a small tree.
const tree = () => {
  const root = mkdtempSync(join(tmpdir(), "build-stamp-"))
  mkdirSync(join(root, "src", "agents"), { recursive: true })
  writeFileSync(join(root, "src", "main.ts"), "export {}\n")
  writeFileSync(join(root, "src", "agents", "Agent.ts"), "export const a = 1\n")
  writeFileSync(join(root, "package.json"), "{}\n")
  writeFileSync(join(root, "tsconfig.json"), "{}\n")
  return root
}
/** What `npm run build` does around tsc and the bundle: begin, write dist/, end. */
const build = (root: string) => {
  begin(root)
  for (const file of ["main.js", "index.js", "index.d.ts"]) writeFileSync(join(root, "dist", file), "")
  end(root)
}

describe("npm start's up-to-date check", () => {
  it("a finished build is up to date until an input changes, appears or goes", () => {
    const root = tree()
    try {
      expect(staleReason(root)).toBe("dist/main.js is missing")
      build(root)
      expect(staleReason(root)).toBeUndefined()
      // The same contents written again (a checkout, a copy) do not count as a change.
      writeFileSync(join(root, "src", "main.ts"), "export {}\n")
      expect(staleReason(root)).toBeUndefined()
      for (
        const change of [
          () => writeFileSync(join(root, "src", "agents", "Agent.ts"), "export const a = 2\n"),
          () => writeFileSync(join(root, "src", "agents", "New.ts"), "export {}\n"),
          () => rmSync(join(root, "src", "main.ts")),
          () => writeFileSync(join(root, "tsconfig.json"), `{"compilerOptions":{}}\n`),
          () => writeFileSync(join(root, "tsconfig.build.json"), "{}\n")
        ]
      ) {
        change()
        expect(staleReason(root)).toBe("its inputs changed since the last build")
        build(root)
        expect(staleReason(root)).toBeUndefined()
      }
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("a build that did not finish, or an edit while it ran, leaves the next start building", () => {
    const root = tree()
    try {
      build(root)
      writeFileSync(join(root, "src", "main.ts"), "export const changed = true\n")
      begin(root) // and tsc fails: no end
      expect(staleReason(root)).toBe("its inputs changed since the last build")
      begin(root)
      writeFileSync(join(root, "src", "main.ts"), "export const changed = 2\n") // saved during the build
      end(root)
      expect(staleReason(root)).toBe("its inputs changed since the last build")
      rmSync(join(root, "dist", ".build-stamp"))
      expect(staleReason(root)).toBe("no finished build is recorded")
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("npm run build records its stamp and npm start checks it before starting", () => {
    const { scripts, files } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
    expect(scripts.build).toMatch(
      /node scripts\/build-stamp\.mjs begin && .*tsc -p tsconfig\.build\.json && node scripts\/bundle\.mjs && node scripts\/build-stamp\.mjs end$/
    )
    expect(scripts.start).toMatch(/&& node scripts\/build-stamp\.mjs ensure && node dist\/main\.js$/)
    expect(files, "the stamp is not packed").toContain("!dist/.build-stamp")
  })
})
