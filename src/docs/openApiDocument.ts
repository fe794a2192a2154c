/**
 * Adjusts the generated OpenAPI document to what is actually sent. HttpApi always declares its own
 * HttpApiDecodeError, but ErrorMapping turns every decode failure into the ValidationError envelope,
 * so the document must not promise the former. Effect marks `unknown` with `$id: "/schemas/unknown"`,
 * which OpenAPI 3.1 rejects when repeated. /ui is served beside the API, so it is added here. Error
 * unions that are all the plain envelope become the envelope (see mergeEnvelopeUnions).
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
      "401": {
        description: "Authentication required (documentation routes are protected when auth.defaultPrivate is on)",
        content: { "application/json": { schema: { $ref: "#/components/schemas/Unauthorized" } } }
      },
      "404": {
        description: "Swagger UI is disabled",
        content: { "application/json": { schema: { $ref: "#/components/schemas/NotFound" } } }
      }
    }
  }
}

const ENVELOPE = "ErrorEnvelope"

// Every error class's component is the same `{success: false, error}` (Envelope.Failure); they differ by name.
const isEnvelope = (schema: any): boolean =>
  schema?.type === "object" && Object.keys(schema.properties ?? {}).sort().join() === "error,success" &&
  schema.properties.success.enum?.[0] === false && schema.properties.error.type === "string"

/**
 * HttpApi joins the errors one status can have in `anyOf` (400: ValidationError or BadRequest); when
 * they are all the plain envelope, the response names the envelope itself, so that a reader of the
 * operation sees `success` and `error` one reference away, as for every other status.
 */
const mergeEnvelopeUnions = (paths: Record<string, any>, schemas: Record<string, any>) => {
  const envelopeRef = (member: any) =>
    typeof member?.$ref === "string" && isEnvelope(schemas[member.$ref.replace("#/components/schemas/", "")])
  let used = false
  const out: Record<string, any> = {}
  for (const [path, item] of Object.entries(paths)) {
    out[path] = {}
    for (const [method, operation] of Object.entries(item as Record<string, any>)) {
      const responses = Object.fromEntries(
        Object.entries(operation.responses ?? {}).map(([status, response]: [string, any]) => {
          const media = response.content?.["application/json"]
          if (!Array.isArray(media?.schema?.anyOf) || !media.schema.anyOf.every(envelopeRef)) return [status, response]
          used = true
          const content = {
            ...response.content,
            "application/json": { ...media, schema: { $ref: `#/components/schemas/${ENVELOPE}` } }
          }
          return [status, { ...response, content }]
        })
      )
      out[path][method] = { ...operation, responses }
    }
  }
  const template = Object.values(schemas).find(isEnvelope)
  return { paths: out, schemas: used && template !== undefined ? { ...schemas, [ENVELOPE]: template } : schemas }
}

/** A request with no body reads as `{}` (src/http/JsonInput.ts), so a body whose object requires nothing is optional. */
const optionalBodies = (paths: Record<string, any>): Record<string, any> =>
  Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as Record<string, any>).map(([method, operation]) => {
          const schema = operation.requestBody?.content?.["application/json"]?.schema
          const optional = schema?.type === "object" && (schema.required ?? []).length === 0
          return [
            method,
            optional ? { ...operation, requestBody: { ...operation.requestBody, required: false } } : operation
          ]
        })
      )
    ])
  )

export const describeOpenApi = (spec: Record<string, any>): Record<string, any> => {
  const out = rewrite(spec) as Record<string, any>
  const { HttpApiDecodeError: _decode, Issue: _issue, PropertyKey: _key, ...declared } = out.components.schemas
  const { paths, schemas } = mergeEnvelopeUnions({ ...out.paths, "/ui": uiPath }, declared)
  return { ...out, paths: optionalBodies(paths), components: { ...out.components, schemas } }
}
