import type { OpenAPISpec } from "@effect/platform/OpenApi"

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

/** Links to the documentation and to every list (a GET without path parameters) the API has. */
export const landingPage = (spec: OpenAPISpec, options: { readonly swaggerUI: boolean }): string => {
  const lists = Object.entries(spec.paths)
    .filter(([path, item]) => item.get !== undefined && !path.includes("{") && !["/", "/doc", "/ui"].includes(path))
    .map(([path, item]) => `<li><a href="${escape(path)}">GET ${escape(path)}</a> — ${escape(item.get?.summary ?? "")}</li>`)
  const docs = [
    `<li><a href="/doc">/doc</a> — OpenAPI 3.1 document</li>`,
    options.swaggerUI ? `<li><a href="/ui">/ui</a> — interactive API explorer</li>` : ""
  ]
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${escape(spec.info.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:48rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style>
</head>
<body>
<h1>${escape(spec.info.title)}</h1>
<p>${escape(spec.info.description ?? "")}</p>
<h2>Documentation</h2>
<ul>${docs.join("")}</ul>
<h2>Lists</h2>
<ul>${lists.join("")}</ul>
</body>
</html>`
}
