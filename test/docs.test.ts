import { HttpApi } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Effect } from "effect"
import { ServiceApi } from "../src/Api.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/** Every endpoint the HttpApi defines, as "METHOD /openapi/{path}". */
const implementedRoutes = () => {
  const routes: Array<string> = []
  HttpApi.reflect(ServiceApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) =>
      routes.push(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
  })
  return routes
}

layer(TestServerLive(), { excludeTestServices: true })("documentation", (it) => {
  it.effect("/doc is a valid OpenAPI 3.1 document listing every implemented route", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec, status } = yield* fetchJson(`${url}/doc`)
      expect(status).toBe(200)
      expect(spec.openapi).toBe("3.1.0")
      const validator = new Validator()
      const result = yield* Effect.promise(() => validator.validate(spec))
      expect(result.errors ?? []).toEqual([])
      expect(result.valid).toBe(true)

      const documented = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${method} ${path}`)
      )
      const implemented = implementedRoutes()
      expect(implemented.length).toBeGreaterThan(3)
      for (const route of [...implemented, "get /ui"]) expect(documented).toContain(route)
    }))

  it.effect("/doc marks a body optional exactly when an empty one is accepted (an object requiring nothing)", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec } = yield* fetchJson(`${url}/doc`)
      const required = (path: string) => spec.paths[path].post.requestBody.required
      expect(required("/workflows/{id}/executions/{executionId}/cancel")).toBe(false)
      expect(required("/workflows/{id}/executions/{executionId}/suspend")).toBe(false)
      expect(required("/agents/{id}/text")).toBe(true)
      expect(required("/setup-observability")).toBe(true)
    }))

  it.effect("/doc shows the envelopes actually sent, not the library's decode error", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec } = yield* fetchJson(`${url}/doc`)
      expect(JSON.stringify(spec)).not.toContain("HttpApiDecodeError")
      const ok = spec.paths["/tools"].get.responses["200"].content["application/json"].schema
      expect(ok.required).toEqual(["success", "data"])
      expect(ok.properties.success.enum).toEqual([true])
      const notFound = spec.paths["/tools/{name}/execute"].post.responses["404"].content["application/json"].schema
      expect(spec.components.schemas[notFound.$ref.split("/").pop()]).toMatchObject({
        required: ["success", "error"],
        properties: { success: { enum: [false] }, error: { type: "string" } }
      })
    }))

  it.effect("/doc shows issue #32's fields: approvals, the answering model, guardrails and working memory", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { body: spec } = yield* fetchJson(`${url}/doc`)
      const schemas = spec.components.schemas
      /** The property names reachable from `node`, following $refs (each component once). */
      const propertiesOf = (node: unknown, seen = new Set<string>()): Set<string> => {
        const names = new Set<string>()
        const walk = (value: unknown): void => {
          if (Array.isArray(value)) return value.forEach(walk)
          if (typeof value !== "object" || value === null) return
          const record = value as Record<string, unknown>
          if (typeof record.$ref === "string") {
            const name = record.$ref.split("/").pop()!
            if (!seen.has(name)) (seen.add(name), walk(schemas[name]))
          }
          if (typeof record.properties === "object" && record.properties !== null) {
            for (const key of Object.keys(record.properties)) names.add(key)
          }
          Object.values(record).forEach(walk)
        }
        walk(node)
        return names
      }
      const text = spec.paths["/agents/{id}/text"].post
      const request = propertiesOf(text.requestBody)
      expect(request).toContain("approvals")
      expect(request).toContain("approvalId")
      const result = propertiesOf(text.responses["200"])
      for (const field of ["pendingApprovals", "expiresAt", "model", "modelId"]) expect(result).toContain(field)
      expect(propertiesOf(text.responses["422"])).toContain("errorDetail")
      const details = propertiesOf(spec.paths["/agents/{id}"].get.responses["200"])
      for (const field of ["guardrails", "workingMemory", "needsApproval"]) expect(details).toContain(field)
      expect(propertiesOf(spec.paths["/agents"].get.responses["200"])).toContain("needsApproval")
      const history = schemas.AgentHistoryEntry
      expect(history.properties.status.enum).toContain("blocked")
      expect(Object.keys(history.properties)).toContain("model")
      const memory = spec.paths["/agents/{id}/working-memory"]
      expect(Object.keys(memory).sort()).toEqual(["delete", "get"])
      for (const field of ["value", "version", "updatedAt"]) {
        expect(propertiesOf(memory.get.responses["200"])).toContain(field)
      }
    }))

  it.effect("GET / is an HTML landing page linking /console, /doc, /ui and the lists", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* Effect.promise(() => fetch(`${url}/`))
      expect(response.headers.get("content-type")).toMatch(/text\/html/)
      const html = yield* Effect.promise(() => response.text())
      for (const href of ["/console", "/doc", "/ui", "/tools"]) expect(html).toContain(`href="${href}"`)
    }))

  it.effect("GET /ui serves Swagger UI inline, with no external script or stylesheet", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* Effect.promise(() => fetch(`${url}/ui`))
      expect(response.status).toBe(200)
      const html = yield* Effect.promise(() => response.text())
      expect(html).toContain("SwaggerUIBundle")
      expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href="http/)
    }))
})

layer(TestServerLive({ config: { enableSwaggerUI: false } }), { excludeTestServices: true })("Swagger UI off", (it) => {
  it.effect("GET /ui is 404 with the envelope, and the landing page does not link it", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/ui`)).toMatchObject({ status: 404, body: { success: false, error: "Not found" } })
      const html = yield* Effect.promise(() => fetch(`${url}/`).then((r) => r.text()))
      expect(html).not.toContain(`href="/ui"`)
    }))
})

describe("enableSwaggerUI default", () => {
  it("is on outside production and off with NODE_ENV=production unless the config says so", () => {
    expect(resolveServerConfig({}, {}).enableSwaggerUI).toBe(true)
    expect(resolveServerConfig({}, { NODE_ENV: "production" }).enableSwaggerUI).toBe(false)
    expect(resolveServerConfig({ enableSwaggerUI: true }, { NODE_ENV: "production" }).enableSwaggerUI).toBe(true)
  })
})
