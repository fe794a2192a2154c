import type { AppCatalog } from "./appCatalog.js"

/**
 * The statuses of the errors the app's tools declare (`defineTool({ errors })`), added to POST
 * /tools/{name}/execute: the API's schemas are the same for every app, the tools are not. Each status
 * names the errors (and their tools) answered with it.
 */
const EXECUTE_PATH = "/tools/{name}/execute"
const ENVELOPE = "ToolErrorEnvelope"

const envelope = {
  type: "object",
  required: ["success", "error", "errorDetail"],
  properties: {
    success: { type: "boolean", enum: [false] },
    error: { type: "string" },
    errorDetail: { $ref: "#/components/schemas/ErrorDetail" }
  },
  additionalProperties: false,
  description: "An error a tool declares: its message, and its tag and fields"
}

export const withToolErrorStatuses =
  (catalog: () => AppCatalog) => (spec: Record<string, any>): Record<string, any> => {
    const operation = spec.paths?.[EXECUTE_PATH]?.post
    const byStatus = new Map<number, Array<string>>()
    for (const { status, tag, tool } of catalog().toolErrors) {
      byStatus.set(status, [...(byStatus.get(status) ?? []), `${tag} (${tool})`])
    }
    if (operation === undefined || byStatus.size === 0 || spec.components?.schemas?.ErrorDetail === undefined) {
      return spec
    }
    const responses: Record<string, any> = { ...operation.responses }
    for (const [status, errors] of [...byStatus].sort(([a], [b]) => a - b)) {
      const declared = { $ref: `#/components/schemas/${ENVELOPE}` }
      const existing = responses[String(status)]
      const schema = existing?.content?.["application/json"]?.schema
      responses[String(status)] = {
        description: `${existing === undefined ? "" : `${existing.description}; or `}an error a tool declares: ${
          errors.join(", ")
        }`,
        content: { "application/json": { schema: schema === undefined ? declared : { anyOf: [schema, declared] } } }
      }
    }
    return {
      ...spec,
      paths: { ...spec.paths, [EXECUTE_PATH]: { ...spec.paths[EXECUTE_PATH], post: { ...operation, responses } } },
      components: { ...spec.components, schemas: { ...spec.components.schemas, [ENVELOPE]: envelope } }
    }
  }
