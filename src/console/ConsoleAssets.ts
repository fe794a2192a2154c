import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

/**
 * The console's browser bundle, written by `npm run build` (scripts/bundle.mjs) into dist/console-app/:
 * content-hashed files, a gzipped copy of each, and manifest.json naming the entry script and style.
 */
export interface ConsoleManifest {
  readonly script: string
  readonly style: string
  readonly files: ReadonlyArray<string>
}

export interface ConsoleAsset {
  readonly contentType: string
  readonly body: Uint8Array
  readonly gzipped: Uint8Array | undefined
}

export interface ConsoleAssets {
  readonly manifest: ConsoleManifest
  readonly files: ReadonlyMap<string, ConsoleAsset>
}

// Where dist/console-app is from this module: beside the CLI bundle (dist/main.js), beside tsc's output
// (dist/console/), or from the sources (src/console/, as the tests run them).
const CANDIDATES = ["./console-app/", "../console-app/", "../../dist/console-app/"]

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8"
}

const contentTypeOf = (name: string) => CONTENT_TYPES[name.slice(name.lastIndexOf("."))] ?? "application/octet-stream"

/** The built console, or undefined when it was not built (the sources run without `npm run build`). */
export const loadConsoleAssets = (): ConsoleAssets | undefined => {
  const dir = CANDIDATES.map((candidate) => fileURLToPath(new URL(candidate, import.meta.url)))
    .find((dir) => existsSync(`${dir}manifest.json`))
  if (dir === undefined) return undefined
  const manifest = JSON.parse(readFileSync(`${dir}manifest.json`, "utf8")) as ConsoleManifest
  const files = new Map<string, ConsoleAsset>()
  for (const name of manifest.files) {
    files.set(name, {
      contentType: contentTypeOf(name),
      body: readFileSync(`${dir}${name}`),
      gzipped: existsSync(`${dir}${name}.gz`) ? readFileSync(`${dir}${name}.gz`) : undefined
    })
  }
  return { manifest, files }
}
