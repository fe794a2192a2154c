#!/usr/bin/env node
// The npm registry mirror this project is built against lacks some other-platform builds of optional
// native packages (rollup, esbuild, msgpackr-extract, ...). npm then leaves them out of
// package-lock.json, and `npm ci` refuses that lock as "out of sync". This adds a bare entry for each
// optional dependency the lock names but does not list; `npm ci` skips those that do not fit this
// platform or cannot be fetched, as it does for any optional dependency. Run after `npm install`.
import { readFileSync, writeFileSync } from "node:fs"

const path = new URL("../package-lock.json", import.meta.url)
const lock = JSON.parse(readFileSync(path, "utf8"))
const packages = lock.packages
let added = 0
for (const [key, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = key === "" ? `node_modules/${name}` : `${key}/node_modules/${name}`
    if (packages[nested] !== undefined || packages[`node_modules/${name}`] !== undefined) continue
    packages[`node_modules/${name}`] = { version, optional: true, ...(entry.dev ? { dev: true } : {}) }
    added++
  }
}
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n")
console.log(`complete-lockfile: added ${added} optional entries`)
