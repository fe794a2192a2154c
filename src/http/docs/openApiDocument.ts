/**
 * Adjusts the generated OpenAPI document to what is actually sent. HttpApi always declares its own
 * HttpApiDecodeError, but ErrorMapping turns every decode failure into the ValidationError envelope,
 * so the document must not promise the former. Effect marks `unknown` with `$id: "/schemas/unknown"`,
 * which OpenAPI 3.1 rejects when repeated. /ui is served beside the API, so it is added here.
 */
const DECODE_ERROR_REF = "#/components/schemas/HttpApiDecodeError"
const VALIDATION_ERROR_REF = "#/components/schemas/ValidationError"

const rewrite = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(rewrite)
  if (typeof node !== "object" || node === null) return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === "$id" && typeof value === "string" && value.startsWith("/schemas/")) continue
    if (key === "$ref" && value === DECODE_ERROR_REF) out[key] = VALIDATION_ERROR_REF
    else if (key === "anyOf" && Array.isArray(value)) {
      const members = value.filter((member) => (member as { $ref?: string }).$ref !== DECODE_ERROR_REF)
      if (members.length === 1) Object.assign(out, rewrite(members[0]))
      else out[key] = rewrite(members)
    } else if (key === "description" && value === "The request did not match the expected schema") {
      out[key] = "Invalid request: malformed JSON or a value failing validation"
    } else out[key] = rewrite(value)
  }
  return out
}

const uiPath = {
  get: {
    tags: ["Documentation"],
    operationId: "docs.ui",
    summary: "Interactive API explorer (Swagger UI, served inline; 404 when enableSwaggerUI is off)",
    responses: {
      "200": { description: "HTML page", content: { "text/html": { schema: { type: "string" } } } },
      "404": {
        description: "Swagger UI is disabled",
        content: { "application/json": { schema: { $ref: "#/components/schemas/NotFound" } } }
      }
    }
  }
}

export const describeOpenApi = (spec: Record<string, any>): Record<string, any> => {
  const out = rewrite(spec) as Record<string, any>
  const { HttpApiDecodeError: _decode, Issue: _issue, PropertyKey: _key, ...schemas } = out.components.schemas
  return {
    ...out,
    paths: { ...out.paths, "/ui": uiPath },
    components: { ...out.components, schemas }
  }
}
