/**
 * Long fuzz runs of every POST route, open and with JWT authentication, against the built service.
 * Usage: npm run fuzz [-- --cases 10000 --seed 42 --concurrency 4 --timeout 20000 --mode open|jwt|both]
 * Exits 1 on any violation, printing each distinct cause with its first request and the seed.
 */
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { ServiceApi } from "../src/Api.js"
import { formatReport, fuzz } from "./fuzz-core.js"

const { values } = parseArgs({
  options: {
    cases: { type: "string" },
    seed: { type: "string" },
    concurrency: { type: "string" },
    timeout: { type: "string" },
    mode: { type: "string" }
  }
})
const cases = Number(values.cases ?? 10_000)
const seed = Number(values.seed ?? Date.now() % 2 ** 31)
const mode = values.mode ?? "both"
const modes = mode === "both" ? [false, true] : [mode === "jwt"]
const root = fileURLToPath(new URL("../../", import.meta.url))

let failed = false
for (const jwt of modes) {
  const report = await fuzz({
    api: ServiceApi,
    root,
    cases: Math.ceil(cases / modes.length),
    seed,
    jwt,
    concurrency: Number(values.concurrency ?? 4),
    timeoutMs: Number(values.timeout ?? 20_000),
    onProgress: (done, total) => {
      if (done % 1000 === 0) console.error(`  ${jwt ? "jwt" : "open"}: ${done}/${total}`)
    }
  })
  console.log(formatReport(report))
  failed ||= report.violations.length > 0
}
if (failed) console.log(`Replay with: npm run fuzz -- --cases ${cases} --seed ${seed} --mode ${mode}`)
process.exit(failed ? 1 : 0)
