import { HttpServerResponse } from "@effect/platform"
import { createHash } from "node:crypto"
import { securityHeaders } from "../http/SecurityHeaders.js"

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`

/** The inline elements of `html` whose content a CSP must allow: executable scripts and styles. */
const inline = (html: string, tag: "script" | "style"): Array<string> =>
  [...html.matchAll(
    tag === "script"
      ? /<script(?![^>]*\btype="application\/json")[^>]*>([\s\S]*?)<\/script>/g
      : /<style[^>]*>([\s\S]*?)<\/style>/g
  )].map((match) => match[1])

/**
 * The headers of a page the service writes itself (`/`, `/ui`): only the page's own inline scripts run
 * (by hash). `inlineStyles`: style attributes too (Swagger UI sets some), else only the page's own style
 * elements, by hash.
 */
export const pageSecurityHeaders = (
  html: string,
  options: { readonly inlineStyles: boolean }
): Record<string, string> =>
  securityHeaders({
    scripts: inline(html, "script").map(hashOf),
    styles: options.inlineStyles ? ["'unsafe-inline'"] : inline(html, "style").map(hashOf)
  })

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
