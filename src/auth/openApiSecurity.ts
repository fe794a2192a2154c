import type { AuthPolicy } from "./AuthPolicy.js"
import type { RouteEntry } from "./RouteClass.js"

const BEARER = { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } }
const CONSOLE = { consoleKey: { type: "apiKey", in: "header", name: "x-console-access-key" } }

/**
 * Marks each operation of the OpenAPI document with the security it has under the active
 * configuration, from the same route table and policy the runtime check uses.
 */
export const withSecurity = (
  policy: AuthPolicy["Type"],
  routes: ReadonlyArray<RouteEntry>
) =>
(spec: Record<string, any>): Record<string, any> => {
  const byOperation = new Map(routes.map((route) => [route.operationId, route]))
  let usesBearer = false
  let usesConsole = false
  const paths: Record<string, any> = {}
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    paths[path] = {}
    for (const [method, operation] of Object.entries(item)) {
      const route = byOperation.get(operation.operationId)
      const routeClass = route?.routeClass ?? (path === "/ui" ? "documentation" : "custom")
      const pattern = route?.path ?? path
      let security: Array<Record<string, Array<string>>> = []
      if (routeClass === "console" && policy.consoleKeyRequired) {
        security = [{ consoleKey: [] }]
        usesConsole = true
      } else if (policy.requiresToken(routeClass, method.toUpperCase(), pattern)) {
        security = [{ bearerAuth: [] }]
        usesBearer = true
      }
      paths[path][method] = { ...operation, security }
    }
  }
  const { securitySchemes: declared, ...components } = spec.components ?? {}
  const securitySchemes = { ...declared, ...(usesBearer ? BEARER : {}), ...(usesConsole ? CONSOLE : {}) }
  // Swagger UI shows its Authorize button whenever the document has `securitySchemes`, even `{}`.
  return {
    ...spec,
    paths,
    components: Object.keys(securitySchemes).length === 0 ? components : { ...components, securitySchemes }
  }
}
