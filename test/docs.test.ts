import { HttpApi } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Effect } from "effect"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { ServiceApi } from "../src/Api.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/** Every endpoint the HttpApi defines, as "METHOD /openapi/{path}". */
const implementedRoutes = () => {
  const routes: Array<string> = []
  HttpApi.reflect(ServiceApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => routes.push(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
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
