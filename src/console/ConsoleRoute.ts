import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { securityHeaders } from "../http/SecurityHeaders.js"
import { type ConsoleAssets, loadConsoleAssets } from "./ConsoleAssets.js"

/**
 * Strict: only this origin's script, style and connections (fetch, SSE and WebSockets); no inline script
 * or style, no plugin, no framing. What a user, model or tool wrote is rendered as text, and this is the
 * second line should a bug ever render it as HTML.
 */
const SECURITY_HEADERS = securityHeaders({ scripts: ["'self'"], styles: ["'self'"] })

export const ASSETS_PATH = "/console/assets"

/** The shell names the hashed assets; its heading paints before the script has run. */
const shell = (assets: ConsoleAssets) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS_PATH}/${assets.manifest.style}">
<script type="module" src="${ASSETS_PATH}/${assets.manifest.script}"></script>
</head>
<body>
<div id="app"><header class="top"><strong>Console</strong></header><main><p>Loading…</p></main></div>
</body>
</html>
`

const NOT_BUILT = "The console is not built: run `npm run build` (it bundles src/console/app into dist/console-app)."

const acceptsGzip = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["accept-encoding"] ?? "").includes("gzip")

/**
 * The console at GET /console: an HTML shell (never cached, it names the current assets) and its
 * content-hashed assets under /console/assets/ (cached for a year, gzipped when the client accepts it).
 * Both are read from disk by the first request, so start-up pays nothing. The shell holds no data and
 * needs no credentials (a browser's navigation cannot carry a bearer token); every API call it makes is
 * authorised as any other client's.
 */
export const ConsoleLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const assets = yield* Effect.cached(Effect.sync(loadConsoleAssets))
    const page = Effect.map(assets, (assets) =>
      assets === undefined
        ? HttpServerResponse.text(NOT_BUILT, { status: 503, headers: SECURITY_HEADERS })
        : HttpServerResponse.html(shell(assets)).pipe(
          HttpServerResponse.setHeaders({ ...SECURITY_HEADERS, "cache-control": "no-cache" })
        ))
    const asset = Effect.gen(function*() {
      const built = yield* assets
      const { name } = yield* HttpRouter.params
      const file = name === undefined ? undefined : built?.files.get(name)
      if (file === undefined) return HttpServerResponse.text("Not found", { status: 404, headers: SECURITY_HEADERS })
      const request = yield* HttpServerRequest.HttpServerRequest
      const gzip = file.gzipped !== undefined && acceptsGzip(request)
      return HttpServerResponse.uint8Array(gzip ? file.gzipped! : file.body, {
        contentType: file.contentType,
        headers: {
          ...SECURITY_HEADERS,
          "cache-control": "public, max-age=31536000, immutable",
          vary: "accept-encoding",
          ...(gzip ? { "content-encoding": "gzip" } : {})
        }
      })
    })
    yield* router.get("/console", page)
    yield* router.get(`${ASSETS_PATH}/:name`, asset)
  })
)
