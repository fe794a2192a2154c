/**
 * Bundles the CLI entry (dist/main.js, compiled by tsc) into one ES module with its dependencies, over
 * the tsc output. Start-up was spent resolving, reading and compiling about 1,200 modules (most of them
 * unused re-exports); a tree-shaken, minified bundle compiles in a fraction of that. Dynamic `import()`s
 * stay separate chunks (dist/chunks/), so what a request may never use is still loaded only on demand.
 * The rest of dist/ (index.js and the .d.ts files for embedders) is left as tsc wrote it.
 * Native addons stay external and load from node_modules.
 */
import { build } from "esbuild"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { gzipSync } from "node:zlib"

rmSync("dist/chunks", { recursive: true, force: true })

// `--unminified` (or BUNDLE_UNMINIFIED=1 through `npm run build`): readable names in a CPU profile without
// esbuild's keepNames, whose __name() calls would cost at run time what the profile measures (docs/benchmarks.md, "Issue #44").
const unminified = process.argv.includes("--unminified") || process.env.BUNDLE_UNMINIFIED === "1"

// Options both bundles share. Native addons stay external; bundled CommonJS modules call require() for
// Node built-ins, and an ES module has none of its own.
const common = {
  allowOverwrite: true,
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node22",
  minify: !unminified,
  // Maps without copies of the sources (three quarters of their size): a stack trace under
  // --enable-source-maps still names each frame's file and line.
  sourcemap: "linked",
  sourcesContent: false,
  legalComments: "none",
  external: ["better-sqlite3", "pg-native"],
  banner: {
    js:
      "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);"
  },
  logLevel: "warning"
}

await build({
  ...common,
  entryPoints: { main: "dist/main.js" },
  outdir: "dist",
  chunkNames: "chunks/[name]-[hash]",
  splitting: true
})

// The writer threads (src/observability/StoreWriter.ts, src/storage/StoreCommits.ts): a file of its
// own each, sharing no chunk with the CLI's, so that the CLI's start-up loads what it did before.
for (const [folder, name] of [["observability", "storeWriterWorker"], ["storage", "commitWorker"]]) {
  await build({ ...common, entryPoints: { [name]: `dist/${folder}/${name}.js` }, outdir: `dist/${folder}` })
}

// The browser console (src/console/app, served at /console by src/console/ConsoleRoute.ts): one
// content-hashed script and style, a gzipped copy of each, and a manifest naming them.
const CONSOLE_OUT = "dist/console-app"
rmSync(CONSOLE_OUT, { recursive: true, force: true })
const consoleBuild = await build({
  entryPoints: { console: "src/console/app/main.tsx" },
  outdir: CONSOLE_OUT,
  entryNames: "[name]-[hash]",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning"
})
const consoleFiles = Object.keys(consoleBuild.metafile.outputs).map((path) => path.slice(CONSOLE_OUT.length + 1))
for (const name of consoleFiles) {
  writeFileSync(`${CONSOLE_OUT}/${name}.gz`, gzipSync(readFileSync(`${CONSOLE_OUT}/${name}`), { level: 9 }))
}
writeFileSync(
  `${CONSOLE_OUT}/manifest.json`,
  JSON.stringify({
    script: consoleFiles.find((name) => name.endsWith(".js")),
    style: consoleFiles.find((name) => name.endsWith(".css")),
    files: consoleFiles
  })
)
