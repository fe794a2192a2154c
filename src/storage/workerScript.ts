import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

/**
 * A worker thread's script, `folder/file` under dist/: beside the module that starts it in tsc's
 * output, under its folder from the bundle (dist/main.js or one of its dist/chunks/), and the built
 * one when that module runs from source (tests, after `npm run build`). `from` is that module's
 * `import.meta.url`.
 */
export const workerScript = (from: string, folder: string, file: string): string | undefined =>
  [`./${file}`, `./${folder}/${file}`, `../${folder}/${file}`, `../../dist/${folder}/${file}`]
    .map((relative) => fileURLToPath(new URL(relative, from)))
    .find((path) => existsSync(path))
