// Main-thread busy (non-idle) time of the measured load, per request, from a `node --cpu-prof` directory:
// `node scripts/cpu-per-call.mjs <profile dir> <requests>` (the measured load is the profile's last busy stretch over 5 s).
import { readdirSync, readFileSync } from "node:fs"
const [dir, count] = process.argv.slice(2)
const file = readdirSync(dir).find((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name))
const p = JSON.parse(readFileSync(`${dir}/${file}`, "utf8"))
const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id))
const size = 500_000
const b = []
let t = 0
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i]
  const k = Math.floor(t / size)
  b[k] = (b[k] ?? 0) + (idle.has(p.samples[i]) ? 0 : (p.timeDeltas[i + 1] ?? 0))
}
const busy = (k) => (b[k] ?? 0) >= 0.3 * size
let best
for (let k = 0; k < b.length; k++) {
  if (!busy(k)) continue
  let e = k
  while (e + 1 < b.length && busy(e + 1)) e++
  if (e - k + 1 >= 10) best = [k, e]
  k = e
}
const [from, to] = [best[0] - 1, best[1] + 1]
let sum = 0
for (let k = from; k <= to; k++) sum += b[k] ?? 0
console.log(
  `busy ${(sum / 1e3).toFixed(0)} ms in ${((to - from + 1) / 2).toFixed(1)} s, ${
    (sum / 1e3 / Number(count)).toFixed(4)
  } ms/call`
)
