/**
 * The console's first paint on localhost (issue #15: under 300 ms), and its bundle's size (under 200 KB
 * gzipped). Starts the built service (`node dist/main.js`, built-in model, a new SQLite file), then loads
 * /console in headless Chromium (/usr/bin/chromium) `--runs` times cold (a new browser context: empty
 * cache) and as many times warm (the same context: the hashed assets come from the cache), and prints the
 * median and worst of: first paint, first contentful paint, DOMContentLoaded, and "agents listed" (the
 * first agent-item on screen, which needs the script and a GET /agents). Times are from navigation start,
 * as the browser reports them (performance.getEntriesByType).
 *
 *   npm run build && npx tsc -p tsconfig.scripts.json && node .build/scripts/console-paint.js [--runs 20]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium } from "playwright-core"
import { freePort, startService, stopService, waitUntilReady } from "./support/service.js"

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1] ?? 0) || 20

interface Sample {
  readonly firstPaint: number
  readonly firstContentfulPaint: number
  readonly domContentLoaded: number
  readonly agentsListed: number
}

const measure = async (context: BrowserContext, url: string): Promise<Sample> => {
  const page = await context.newPage()
  await page.goto(`${url}/console`)
  const agentsListed = await (await page.waitForFunction(
    () => document.querySelector("[data-testid=agent-item]") !== null && performance.now(),
    undefined,
    { polling: "raf", timeout: 30_000 }
  )).jsonValue() as number
  const timings = await page.evaluate(() => {
    const paint = (name: string) => performance.getEntriesByName(name)[0]?.startTime ?? Number.NaN
    const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming
    return {
      firstPaint: paint("first-paint"),
      firstContentfulPaint: paint("first-contentful-paint"),
      domContentLoaded: navigation.domContentLoadedEventEnd
    }
  })
  await page.close()
  return { ...timings, agentsListed }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const row = (label: string, samples: ReadonlyArray<Sample>) => {
  const cell = (key: keyof Sample) => {
    const values = samples.map((sample) => sample[key])
    return `${median(values).toFixed(0)} / ${Math.max(...values).toFixed(0)}`
  }
  return `| ${label} | ${cell("firstPaint")} | ${cell("firstContentfulPaint")} | ${cell("domContentLoaded")} | ${
    cell("agentsListed")
  } |`
}

const bundleSizes = () => {
  const dir = "dist/console-app"
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { files: ReadonlyArray<string> }
  return manifest.files.map((name) => ({
    name,
    bytes: statSync(join(dir, name)).size,
    gzipped: statSync(join(dir, `${name}.gz`)).size
  }))
}

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "console-paint-"))
  const port = await freePort()
  const service = startService({ port, databaseUrl: `file:${join(dir, "service.db")}` })
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"]
  })
  try {
    await waitUntilReady(service, port)
    const url = `http://127.0.0.1:${port}`
    const cold: Array<Sample> = []
    for (let run = 0; run < runs; run++) {
      const context = await browser.newContext()
      cold.push(await measure(context, url))
      await context.close()
    }
    const context = await browser.newContext()
    await measure(context, url)
    const warm: Array<Sample> = []
    for (let run = 0; run < runs; run++) warm.push(await measure(context, url))
    await context.close()
    console.log(`Console at ${url}/console, ${runs} loads each; milliseconds from navigation start, median / worst\n`)
    console.log("| load | first paint | first contentful paint | DOMContentLoaded | agents listed |")
    console.log("|---|---|---|---|---|")
    console.log(row("cold (empty cache)", cold))
    console.log(row("warm (assets cached)", warm))
    console.log("\n| file | bytes | gzipped |\n|---|---|---|")
    for (const file of bundleSizes()) console.log(`| ${file.name} | ${file.bytes} | ${file.gzipped} |`)
  } finally {
    await browser.close()
    await stopService(service)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
