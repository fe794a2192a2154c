#!/usr/bin/env node
// Run first by the npm scripts: stops them on a Node line the project does not support (package.json's
// engines), naming the one command that runs them on a supported line instead.
import { readFileSync } from "node:fs"

const supported = [22, 24, 26]
const major = Number(process.versions.node.split(".")[0])
if (!supported.includes(major)) {
  const { engines } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  const script = process.env.npm_lifecycle_event
  process.stderr.write(
    `Node ${process.versions.node} is not supported (engines.node: "${engines.node}").\n` +
      `Run it on a supported line, fetched once from npm into ~/.cache/node-lines:\n` +
      `  scripts/node-line 24 npm ${
        script === undefined ? "test" : script === "test" || script === "start" ? script : `run ${script}`
      }\n` +
      `(22 and 26 work too; on a fresh checkout start with: scripts/node-line 24 npm ci)\n`
  )
  process.exit(1)
}
