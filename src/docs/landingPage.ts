import type { OpenAPISpec } from "@effect/platform/OpenApi"
import type { AppCatalog } from "./appCatalog.js"

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

type Operation = { readonly summary?: string; readonly responses?: Record<string, unknown> }

// A WebSocket route answers a plain GET with 426: a browser can only reach it from a WebSocket client.
const isSocket = (operation: Operation) => operation.responses?.["101"] !== undefined

const item = (href: string, label: string, text: string) =>
  `<li><a href="${escape(href)}">${escape(label)}</a> — ${escape(text)}</li>`

export interface LandingOptions {
  readonly swaggerUI: boolean
}

/**
 * The landing page, but for its WebSocket addresses, which depend on the request's Host: `render` is
 * called per request with the origin (`ws://host:port`) and only fills them in.
 */
export const landingPage = (spec: OpenAPISpec, catalog: AppCatalog, options: LandingOptions) => {
  const gets = Object.entries(spec.paths)
    .flatMap(([path, pathItem]) => pathItem.get === undefined ? [] : [[path, pathItem.get as Operation] as const])
    .filter(([path]) => !path.includes("{") && !["/", "/doc", "/ui"].includes(path))
  const lists = gets.filter(([, operation]) => !isSocket(operation))
    .map(([path, operation]) => item(path, `GET ${path}`, operation.summary ?? ""))
  const sockets = gets.filter(([, operation]) => isSocket(operation))
  const docs = [
    item("/console", "/console", "console: chat with agents, run workflows, traces and live logs"),
    item("/doc", "/doc", "OpenAPI 3.1 document"),
    options.swaggerUI ? item("/ui", "/ui", "interactive API explorer") : ""
  ]
  const agents = catalog.agents.map(({ id, name }) => item(`/agents/${encodeURIComponent(id)}`, id, name))
  const workflows = catalog.workflows.map(({ id, name }) => item(`/workflows/${encodeURIComponent(id)}`, id, name))
  const title = escape(spec.info.title)
  const head = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style>
</head>
<body>
<h1>${title}</h1>
<p>${escape(spec.info.description ?? "")}</p>
<h2>Documentation</h2>
<ul>${docs.join("")}</ul>
<h2>Agents</h2>
<ul>${agents.join("") || "<li>none</li>"}</ul>
<h2>Workflows</h2>
<ul>${workflows.join("") || "<li>none</li>"}</ul>
<h2>Lists</h2>
<ul>${lists.join("")}</ul>
<h2>WebSockets</h2>
<p>Open these with a WebSocket client (a browser's <code>new WebSocket(url)</code>), not as pages.</p>
<ul>`
  const tail = `</ul>
</body>
</html>`
  return {
    render: (origin: string) =>
      head +
      sockets.map(([path, operation]) =>
        `<li><code>${escape(origin + path)}</code> — ${escape(operation.summary ?? "")}</li>`
      )
        .join("") +
      tail
  }
}

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * The WebSocket origin a client reaches this server at: the request's Host (when it is a host name or
 * address, so that nothing else is echoed into the page), `wss` behind a proxy that says it is HTTPS.
 */
export const socketOrigin = (headers: Readonly<Record<string, string | undefined>>, fallbackHost: string): string => {
  const host = headers["host"]
  const scheme = headers["x-forwarded-proto"]?.split(",")[0]?.trim() === "https" ? "wss" : "ws"
  return `${scheme}://${host !== undefined && HOST.test(host) ? host : fallbackHost}`
}
