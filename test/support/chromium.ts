import { Effect, type Scope } from "effect"
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"

/** Debian's Chromium (as CI installs it), or undefined: browser tests are skipped without it. */
export const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(existsSync)

/** Headless Chromium for the scope, with nothing of its own on the network. */
export const launchChromium: Effect.Effect<Browser, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath: CHROMIUM!,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
  ),
  (browser) => Effect.promise(() => browser.close())
)
