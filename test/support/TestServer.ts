import { FetchHttpClient, HttpApiClient, HttpServer } from "@effect/platform"
import { Context, Effect, HashMap, Layer, Logger, LogLevel, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ServiceApi } from "../../src/Api.js"
import type { ServiceApp } from "../../src/App.js"
import { resolveServerConfig, type ServerConfigShape } from "../../src/config/ServerConfig.js"
import { exampleApp } from "../../src/examples/app.js"
import { type AppRequirementsOf, serveWith, ServicesLive } from "../../src/Service.js"

export class TestServer extends Context.Tag("test/TestServer")<TestServer, {
  readonly url: string
  readonly config: ServerConfigShape
  readonly logs: ReadonlyArray<string>
  /** The running services (for example the WorkflowEngine), to inspect what HTTP does not show. */
  readonly services: Context.Context<Layer.Layer.Success<ReturnType<typeof ServicesLive>>>
}>() {}

/** A temporary directory removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "service-test-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/**
 * The real service on a free port of 127.0.0.1, with its own SQLite file. Logs are captured in memory
 * instead of printed.
 */
export interface TestServerOptions<R = never> {
  readonly app?: ServiceApp<R>
  /** The layers of the services the app's code requires (its `R`). */
  readonly provide?: Layer.Layer<AppRequirementsOf<R>>
  readonly config?: Partial<ServerConfigShape>
  /** Replaces services of the app (for example a ToolRunner that misbehaves). */
  readonly override?: Layer.Layer<any>
}

export const TestServerLive = <R = never>(options: TestServerOptions<R> = {}) =>
  Layer.scoped(
    TestServer,
    Effect.gen(function*() {
      const dir = yield* tempDir
      const config: ServerConfigShape = {
        ...resolveServerConfig({}, {}),
        port: 0,
        databaseUrl: Redacted.make(`file:${join(dir, "service.db")}`),
        logLevel: LogLevel.Info,
        ...options.config
      }
      const logs: Array<string> = []
      const capture = Logger.make(({ annotations, cause, message }) => {
        const annotated = [...HashMap.toEntries(annotations)].map(([key, value]) => ` ${key}=${String(value)}`).join("")
        logs.push(
          [message].flat().map(String).join(" ") + annotated + (cause._tag === "Empty" ? "" : ` ${String(cause)}`)
        )
      })
      // Without `provide`, the app requires nothing (an app that does would not compile without it).
      const provided = options.provide ?? (Layer.empty as Layer.Layer<AppRequirementsOf<R>>)
      const services = ServicesLive(options.app ?? exampleApp, config).pipe(Layer.provide(provided))
      const withOverride = options.override ? Layer.merge(services, options.override) : services
      // `services` is built once (layers are shared by reference within a build) and also kept.
      const context = yield* Layer.build(Layer.merge(serveWith(config, withOverride), services)).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, capture))
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      const port = address._tag === "TcpAddress" ? address.port : 0
      return { url: `http://127.0.0.1:${port}`, config, logs, services: context }
    })
  )

/** The client derived from the API, pointed at the test server. */
export const makeClient = Effect.gen(function*() {
  const { url } = yield* TestServer
  return yield* HttpApiClient.make(ServiceApi, { baseUrl: url })
}).pipe(Effect.provide(FetchHttpClient.layer))

export const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body)
})

/** A JSON POST as the console sends it outside production (console writes need `x-service-dev: true`). */
export const consoleJson = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", "x-service-dev": "true" },
  body: JSON.stringify(body)
})

/** fetch + parsed JSON body, for wire-format assertions. */
export const fetchJson = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
    return { status: response.status, headers: response.headers, body }
  })
