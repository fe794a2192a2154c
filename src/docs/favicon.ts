import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"

// Browsers ask for /favicon.ico on every page; "no icon", cached for a day, instead of a 404 each time.
const noIcon = HttpServerResponse.empty({ status: 204, headers: { "cache-control": "public, max-age=86400" } })

/** GET /favicon.ico: 204. Public and outside the API (it is not part of the documented contract). */
export const FaviconLive = HttpApiBuilder.Router.use((router) => router.get("/favicon.ico", noIcon))
