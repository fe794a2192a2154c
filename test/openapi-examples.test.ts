import { expect, layer } from "@effect/vitest"
import Ajv2020 from "ajv/dist/2020.js"
import { Effect, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { existsSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { join } from "node:path"
import { defineApp } from "../src/App.js"
import { exampleApp } from "../src/examples/app.js"
import { ObservabilitySetupLive } from "../src/ops/ObservabilitySetup.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

type Operation = {
  operationId: string
  parameters?: Array<{ name: string; in: string; examples?: Record<string, { value: unknown }>; example?: unknown }>
  requestBody?: { content: Record<string, Holder> }
  responses: Record<string, any>
}
type Spec = { paths: Record<string, Record<string, Operation>>; components: Record<string, any> }

const operations = (spec: Spec) =>
  Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation }))
  )

type Holder = {
  example?: unknown
  examples?: Record<string, { value: unknown }>
  schema?: { examples?: Array<unknown>; anyOf?: Array<{ examples?: Array<unknown> }> }
}

/** What Swagger UI pre-fills: `example`, else the first of `examples`, else the first of the schema's `examples`. */
const prefilled = (holder: Holder | undefined) =>
  holder?.example !== undefined
    ? { value: holder.example }
    : holder?.examples !== undefined && Object.keys(holder.examples).length > 0
    ? { value: Object.values(holder.examples)[0]!.value }
    : Array.isArray(holder?.schema?.examples) && holder.schema.examples.length > 0
    ? { value: holder.schema.examples[0] }
    // Swagger UI fills in a body of alternatives from the first one (POST /agents/:id/text: a call, or approvals answered).
    : Array.isArray(holder?.schema?.anyOf?.[0]?.examples) && holder.schema.anyOf[0].examples.length > 0
    ? { value: holder.schema.anyOf[0].examples[0] }
    : undefined

const pathParameters = (operation: Operation) =>
  (operation.parameters ?? []).filter((parameter) => parameter.in === "path")

/** The request the explorer sends when "Try it out → Execute" is clicked without typing anything. */
const firstClick = (
  url: string,
  path: string,
  method: string,
  operation: Operation,
  values: Record<string, unknown>
) => {
  const body = prefilled(operation.requestBody?.content["application/json"])
  const target = path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(String(values[name])))
  return Effect.promise(async () => {
    const response = await fetch(`${url}${target}`, {
      method: method.toUpperCase(),
      headers: { "content-type": "application/json", "x-service-dev": "true" },
      ...(body === undefined ? {} : { body: JSON.stringify(body.value) })
    })
    return { status: response.status, text: await response.text() }
  })
}

// The ids of records made at run time: no example can name one before a call (see openApiExamples.ts).
const RECORD_IDS = ["executionId", "conversationId", "entryId"]
const APP_GROUPS = /^(agents|tools|workflows)\./

const envFile = join(process.cwd(), ".build", `setup-observability-${process.pid}.env`)

layer(TestServerLive({ override: ObservabilitySetupLive({ envFile }) }), { excludeTestServices: true })(
  "the explorer's first click",
  (it) => {
    it.effect(
      "every agent, tool and workflow operation succeeds with its pre-filled path and body",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
          const appOperations = operations(spec).filter(({ operation }) => APP_GROUPS.test(operation.operationId))
          expect(appOperations.length).toBeGreaterThan(15)
          const needRecord: Array<string> = []
          for (const { method, operation, path } of appOperations) {
            if (operation.requestBody !== undefined) {
              expect(
                prefilled(operation.requestBody.content["application/json"]),
                `${operation.operationId} body example`
              ).toBeDefined()
            }
            const values: Record<string, unknown> = {}
            for (const parameter of pathParameters(operation)) {
              const example = prefilled(parameter)
              if (example === undefined) {
                expect(RECORD_IDS, `${operation.operationId} {${parameter.name}}`).toContain(parameter.name)
              } else values[parameter.name] = example.value
            }
            // A record named in the query (a conversation's working memory) is made at run time too.
            const namesRecord = (operation.parameters ?? []).some((parameter) =>
              parameter.in === "query" && RECORD_IDS.includes(parameter.name)
            )
            if (namesRecord || pathParameters(operation).some((parameter) => values[parameter.name] === undefined)) {
              needRecord.push(operation.operationId)
              continue
            }
            const { status, text } = yield* firstClick(url, path, method, operation, values)
            expect(status, `${method} ${path}: ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(200)
            expect(status, `${method} ${path}: ${text.slice(0, 300)}`).toBeLessThan(300)
          }
          // Those that name an execution: on the one the workflow's own pre-filled execute made.
          const find = (operationId: string) =>
            appOperations.find(({ operation }) => operation.operationId === operationId)!
          const resume = find("workflows.resumeExecution")
          const workflowId = prefilled(pathParameters(resume.operation).find(({ name }) => name === "id"))!
            .value as string
          const start = find("workflows.executeWorkflow")
          const started = yield* firstClick(url, start.path, "post", start.operation, { id: workflowId })
          const executionId = JSON.parse(started.text).data.executionId
          for (
            const operationId of ["workflows.executionState", "workflows.resumeExecution", "workflows.deleteExecution"]
          ) {
            const { method, operation, path } = find(operationId)
            const { status, text } = yield* firstClick(url, path, method, operation, { id: workflowId, executionId })
            expect(status, `${operationId}: ${text.slice(0, 300)}`).toBe(200)
          }
          expect(needRecord.sort()).toEqual(
            expect.arrayContaining([
              "workflows.resumeExecution",
              "workflows.executionState",
              "agents.getWorkingMemory",
              "agents.deleteWorkingMemory"
            ])
          )
        }),
      120_000
    )

    it.effect(
      "every path example with a body example of the same name executes as that pair (not 400); the first ones pair up",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
          let pairs = 0
          for (const { method, operation, path } of operations(spec)) {
            const bodies = operation.requestBody?.content["application/json"]?.examples
            const named = pathParameters(operation).filter((parameter) => parameter.examples !== undefined)
            if (bodies === undefined || named.length === 0) continue
            for (const parameter of named) {
              // What Swagger UI pre-selects: the first of each list.
              expect(Object.keys(parameter.examples!)[0], `${operation.operationId} {${parameter.name}}`).toBe(
                Object.keys(bodies)[0]
              )
            }
            for (const [name, body] of Object.entries(bodies)) {
              const values = Object.fromEntries(
                named.map((parameter) => [parameter.name, parameter.examples![name]?.value])
              )
              for (const parameter of named) {
                expect(values[parameter.name], `${operation.operationId} {${parameter.name}} for ${name}`).toBeDefined()
              }
              if (
                pathParameters(operation).some((parameter) => values[parameter.name] === undefined)
              ) continue
              const withBody = {
                ...operation,
                requestBody: { content: { "application/json": { example: body.value } } }
              }
              const { status, text } = yield* firstClick(url, path, method, withBody, values)
              expect(status, `${method} ${path} as ${name}: ${text.slice(0, 300)}`).not.toBe(400)
              expect(status, `${method} ${path} as ${name}: ${text.slice(0, 300)}`).toBeLessThan(500)
              pairs++
            }
          }
          expect(pairs).toBeGreaterThan(6)
        }),
      120_000
    )

    it.effect("MCP's {id} is pre-filled with its server", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
        for (
          const [path, method] of [["/mcp/servers/{id}", "get"], ["/mcp/{id}/mcp", "post"], ["/mcp/{id}/mcp", "get"], [
            "/mcp/{id}/mcp",
            "delete"
          ]] as const
        ) {
          const id = pathParameters(spec.paths[path]![method]!).find((parameter) => parameter.name === "id")!
          expect(prefilled(id), `${method} ${path}`).toEqual({ value: "default" })
        }
        const { status } = yield* firstClick(url, "/mcp/servers/{id}", "get", spec.paths["/mcp/servers/{id}"]!.get!, {
          id: "default"
        })
        expect(status).toBe(200)
      }))

    it.effect("path examples are the app's own agents, tools and workflows", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
        const names = (path: string, method: string, name: string) =>
          Object.values(spec.paths[path]![method]!.parameters!.find((parameter) => parameter.name === name)!.examples!)
            .map(({ value }) => value)
        expect(names("/agents/{id}/text", "post", "id")).toEqual(["assistant"])
        expect(names("/tools/{name}/execute", "post", "name")).toEqual(
          expect.arrayContaining(["add", "get_weather", "whoami"])
        )
        expect(names("/workflows/{id}/execute", "post", "id")).toEqual(
          expect.arrayContaining(["approval", "pipeline", "slow"])
        )
      }))

    it.effect("the console writes' examples do nothing when executed as pre-filled", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
        for (const path of ["/updates", "/setup-observability"]) {
          const operation = spec.paths[path]!.post!
          expect(prefilled(operation.requestBody!.content["application/json"]), path).toBeDefined()
          const { status } = yield* firstClick(url, path, "post", operation, {})
          expect(status, path).toBeGreaterThanOrEqual(400)
          expect(status, path).toBeLessThan(500)
        }
        expect(existsSync(envFile)).toBe(false)
      }))

    it.effect("without a security scheme, the document declares none (Swagger UI shows no Authorize button)", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec: Spec = (yield* fetchJson(`${url}/doc`)).body
        expect(spec.components).not.toHaveProperty("securitySchemes")
      }))

    it.effect("GET /favicon.ico is not a 404", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* Effect.promise(() => fetch(`${url}/favicon.ico`))
        expect(response.status).toBe(204)
        expect(response.headers.get("cache-control")).toMatch(/max-age=\d+/)
      }))

    it.effect("the landing page links only what a browser opens, shows sockets as ws:// and names agents and workflows", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const get = (headers: Record<string, string>) =>
          Effect.async<string>((resume) => {
            const req = httpRequest(`${url}/`, { headers }, (res) => {
              let text = ""
              res.setEncoding("utf8").on("data", (chunk) => (text += chunk)).on(
                "end",
                () => resume(Effect.succeed(text))
              )
            })
            req.end()
          })
        const html = yield* get({})
        const host = new URL(url).host
        expect(html).not.toMatch(/href="\/ws/)
        for (const path of ["/ws", "/ws/logs", "/ws/observability"]) expect(html).toContain(`ws://${host}${path}`)
        for (const name of ["assistant", "approval", "pipeline", "slow"]) expect(html).toContain(`>${name}</a>`)
        expect(yield* get({ host: "api.example.com:8443", "x-forwarded-proto": "https" })).toContain(
          "wss://api.example.com:8443/ws"
        )
        const hostile = yield* get({ host: "x\"><script>alert(1)</script>" })
        expect(hostile).not.toContain("<script>")
      }))
  }
)

// --- Error responses: the document's schemas validate the bodies the service sends.

const SECRET = "a-long-shared-secret-for-tests-only"
const token = await new SignJWT({ sub: "ada" }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime(
  "1h"
).sign(
  new TextEncoder().encode(SECRET)
)
const boom = defineTool({
  name: "boom",
  description: "Always fails",
  parameters: Schema.Struct({}),
  execute: () => Effect.fail(new Error("boom"))
})
const failing = workflow({
  id: "failing",
  name: "Failing",
  purpose: "Fails",
  input: Schema.Struct({}),
  result: Schema.Unknown
})
  .andThen({ id: "fail", execute: () => Effect.die(new Error("step failed")) })
const errorApp = defineApp({
  ...exampleApp,
  tools: [...exampleApp.tools, boom],
  workflows: [...exampleApp.workflows, failing]
})

layer(
  TestServerLive({
    app: errorApp,
    config: {
      bodyLimit: 4096,
      auth: { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: true, publicRoutes: [] } }
    }
  }),
  { excludeTestServices: true }
)("error responses in /doc", (it) => {
  it.effect(
    "every error body received validates against the schema the document gives its operation and status",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const auth = { authorization: `Bearer ${token}` }
        const spec: Spec = (yield* fetchJson(`${url}/doc`, { headers: auth })).body
        const ajv = new Ajv2020.default({ strict: false, allErrors: true })
        const validatorFor = (template: string, method: string, status: number) => {
          const response = spec.paths[template]?.[method]?.responses[String(status)]
          expect(response, `${method} ${template} documents ${status}`).toBeDefined()
          const schema = response.content["application/json"].schema
          return ajv.compile({ ...schema, components: spec.components })
        }
        const json = (body: string, headers: Record<string, string> = {}) => ({
          method: "POST",
          headers: { "content-type": "application/json", ...auth, ...headers },
          body
        })
        const cases: Array<
          [template: string, method: string, path: string, init: RequestInit | undefined, status: number]
        > = [
          ["/agents/{id}/text", "post", "/agents/assistant/text", json("{}"), 400],
          ["/agents/{id}/text", "post", "/agents/assistant/text", json("{not json"), 400],
          ["/agents/{id}/text", "post", "/agents/assistant/text", {
            ...json("{}"),
            headers: { "content-type": "application/json" }
          }, 401],
          ["/agents/{id}/text", "post", "/agents/nobody/text", json(JSON.stringify({ input: "hi" })), 404],
          [
            "/agents/{id}/text",
            "post",
            "/agents/assistant/text",
            json(JSON.stringify({ input: "x".repeat(8192) })),
            413
          ],
          ["/agents/{id}", "get", "/agents/nobody", { headers: auth }, 404],
          ["/tools/{name}/execute", "post", "/tools/boom/execute", json("{}"), 500],
          ["/tools/{name}/execute", "post", "/tools/add/execute", json(JSON.stringify({ input: { a: "x" } })), 400],
          ["/workflows/{id}/execute", "post", "/workflows/failing/execute", json("{}"), 500],
          [
            "/workflows/{id}/execute",
            "post",
            "/workflows/approval/execute",
            json(JSON.stringify({ input: { amount: 1 } }), { "idempotency-key": "k1" }),
            200
          ],
          [
            "/workflows/{id}/execute",
            "post",
            "/workflows/approval/execute",
            json(JSON.stringify({ input: { amount: 2 } }), { "idempotency-key": "k1" }),
            422
          ],
          ["/workflows/{id}/executions/{executionId}/state", "get", "/workflows/approval/executions/none/state", {
            headers: auth
          }, 404],
          ["/ws", "get", "/ws", undefined, 401],
          ["/ws", "get", `/ws?token=${token}`, undefined, 426],
          ["/mcp/{id}/mcp", "get", "/mcp/default/mcp", { headers: auth }, 405],
          ["/ui", "get", "/ui", undefined, 401],
          ["/doc", "get", "/doc", undefined, 401]
        ]
        for (const [template, method, path, init, status] of cases) {
          const received = yield* fetchJson(`${url}${path}`, init)
          expect(received.status, `${method} ${path}: ${JSON.stringify(received.body).slice(0, 200)}`).toBe(status)
          if (status < 400) continue
          const validate = validatorFor(template, method, status)
          expect(validate(received.body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true)
          // A schema that accepts anything documents nothing.
          expect(validate({}), `${method} ${template} ${status} accepts {}`).toBe(false)
        }
      }),
    60_000
  )

  it.effect("an error response shows the envelope's fields one reference away, never a union of identical envelopes", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const spec: Spec = (yield* fetchJson(`${url}/doc`, { headers: { authorization: `Bearer ${token}` } })).body
      const resolve = (schema: any) =>
        typeof schema?.$ref === "string" ? spec.components.schemas[schema.$ref.split("/").pop()] : schema
      for (const { method, operation, path } of operations(spec)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const schema = response.content?.["application/json"]?.schema
          if (Number(status) < 400 || schema === undefined || path.startsWith("/mcp/")) continue
          const members: Array<any> = schema.anyOf ?? [schema]
          for (const member of members) {
            expect(resolve(member)?.required, `${method} ${path} ${status}`).toEqual(
              expect.arrayContaining(["success", "error"])
            )
          }
          if (members.length > 1) {
            const shapes = new Set(
              members.map((member) => JSON.stringify(Object.keys(resolve(member).properties).sort()))
            )
            expect(shapes.size, `${method} ${path} ${status} joins identical envelopes`).toBe(members.length)
          }
        }
      }
      expect(spec.components.securitySchemes).toHaveProperty("bearerAuth")
    }))
})
