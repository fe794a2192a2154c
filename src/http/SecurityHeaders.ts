/**
 * The headers of a page the service serves itself: a CSP allowing only the given script and style
 * sources (no other origin, no eval), connections to this origin only, no plugin and no framing (also as
 * X-Frame-Options, for browsers without frame-ancestors).
 */
export const securityHeaders = (sources: {
  readonly scripts: ReadonlyArray<string>
  readonly styles: ReadonlyArray<string>
}): Record<string, string> => ({
  "content-security-policy": [
    "default-src 'none'",
    ...(sources.scripts.length === 0 ? [] : [`script-src ${sources.scripts.join(" ")}`]),
    ...(sources.styles.length === 0 ? [] : [`style-src ${sources.styles.join(" ")}`]),
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; "),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
})
