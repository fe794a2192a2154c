import { HttpServerResponse } from "@effect/platform"
import { createHash } from "node:crypto"

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`

/** The inline elements of `html` whose content a CSP must allow: executable scripts and styles. */
const inline = (html: string, tag: "script" | "style"): Array<string> =>
  [...html.matchAll(tag === "script"
    ? /<script(?![^>]*\btype="application\/json")[^>]*>([\s\S]*?)<\/script>/g
    : /<style[^>]*>([\s\S]*?)<\/style>/g)].map((match) => match[1])

/**
 * The headers of a page the service writes itself (`/`, `/ui`): a CSP that runs only the page's own
 * inline scripts (by hash; no eval, no other origin), connects only to this origin, and forbids framing
 * (also as X-Frame-Options, for browsers without frame-ancestors). `inlineStyles`: style attributes
 * too (Swagger UI sets some), else only the page's own style elements, by hash.
 */
export const pageSecurityHeaders = (html: string, options: { readonly inlineStyles: boolean }): Record<string, string> => {
  const scripts = inline(html, "script").map(hashOf)
  const styles = options.inlineStyles ? ["'unsafe-inline'"] : inline(html, "style").map(hashOf)
  const csp = [
    "default-src 'none'",
    ...(scripts.length === 0 ? [] : [`script-src ${scripts.join(" ")}`]),
    ...(styles.length === 0 ? [] : [`style-src ${styles.join(" ")}`]),
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
  return {
    "content-security-policy": csp,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer"
  }
}

const bodyText = (response: HttpServerResponse.HttpServerResponse): string | undefined =>
  response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : undefined

const secured = new WeakMap<object, Record<string, string>>()

/**
 * `response` (an HTML page) with `pageSecurityHeaders`; computed once per body, as Swagger UI's page is
 * one response object of about 2 MB.
 */
export const withPageSecurity = (
  response: HttpServerResponse.HttpServerResponse,
  options: { readonly inlineStyles: boolean }
): HttpServerResponse.HttpServerResponse => {
  let headers = secured.get(response.body)
  if (headers === undefined) {
    const html = bodyText(response)
    if (html === undefined) return response
    headers = pageSecurityHeaders(html, options)
    secured.set(response.body, headers)
  }
  return HttpServerResponse.setHeaders(response, headers)
}
