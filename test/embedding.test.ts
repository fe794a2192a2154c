import { FetchHttpClient, HttpApiClient, HttpServer } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Redacted, Schema, type Scope } from "effect"
import { join } from "node:path"
import { vi } from "vitest"
import {
  defineAgent,
  defineApp,
  defineTool,
  resolveServerConfig,
  type ServerConfigShape,
  ServiceApi,
  ServiceLive,
  ServicesLive,
  workflow
} from "../src/index.js"
import { tempDir } from "./support/TestServer.js"

// What an embedding program writes: its own tool, its own config, the service's layers.
const shout = defineTool({
  name: "shout",
  description: "Upper-cases a word",
  parameters: Schema.Struct({ word: Schema.String }),
  execute: ({ word }) => Effect.succeed({ loud: word.toUpperCase() })
})

const herald = defineAgent({
  id: "herald",
  name: "Herald",
  purpose: "Announces things",
  instructions: "Announce.",
  tools: [shout]
})

const announce = workflow({
  id: "announce",
  name: "Announce",
  purpose: "Shout a word",
  input: Schema.Struct({ word: Schema.String }),
  result: Schema.Struct({ loud: Schema.String })
}).andThen({ id: "shout", execute: ({ data }) => ({ loud: data.word.toUpperCase() }) })

it.scoped("another Effect program embeds the service with its own agents, tools, workflows and config", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = {
      ...resolveServerConfig({ port: 0, enableSwaggerUI: false }, {}),
      databaseUrl: Redacted.make(`file:${join(dir, "embedded.db")}`),
      logLevel: LogLevel.Warning
    }
    const app = defineApp({ agents: [herald], workflows: [announce] })
    const context = yield* Layer.build(ServiceLive(app, config))
    const address = Context.get(context, HttpServer.HttpServer).address
    const baseUrl = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

    const client = yield* HttpApiClient.make(ServiceApi, { baseUrl }).pipe(Effect.provide(FetchHttpClient.layer))
    const tools = yield* client.tools.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(["shout"])
    const run = yield* client.tools.executeTool({ path: { name: "shout" }, payload: { input: { word: "effect" } } })
    expect(run.result).toEqual({ loud: "EFFECT" })
    const ui = yield* Effect.promise(() => fetch(`${baseUrl}/ui`))
    expect(ui.status).toBe(404)
    const answer = yield* client.agents.generateText({
      path: { id: "herald" },
      payload: { input: "please shout hello" }
    })
    expect(answer.toolResults).toEqual([{
      toolCallId: expect.any(String),
      toolName: "shout",
      result: { loud: "HELLO" }
    }])
    const execution = yield* client.workflows.executeWorkflow({
      path: { id: "announce" },
      headers: {},
      payload: { input: { word: "hi" } }
    })
    expect(execution).toMatchObject({ status: "completed", result: { loud: "HI" } })
  }))

it.scoped("two different definitions under one id fail the layer with DuplicateDefinition, before anything starts", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = {
      ...resolveServerConfig({ port: 0 }, {}),
      databaseUrl: Redacted.make(`file:${join(dir, "twice.db")}`),
      logLevel: LogLevel.None
    }
    const otherShout = defineTool({ ...shout, execute: () => Effect.succeed({ loud: "?" }) })
    const apps = [
      [defineApp({ agents: [herald], tools: [otherShout] }), "Two different tools have the name \"shout\""],
      [defineApp({ agents: [herald, { ...herald }] }), "Two different agents have the id \"herald\""],
      [defineApp({ workflows: [announce, announce] }), "Two different workflows have the id \"announce\""]
    ] as const
    for (const [app, message] of apps) {
      const error = yield* Effect.flip(Layer.build(ServiceLive(app, config)))
      expect(error).toMatchObject({ _tag: "DuplicateDefinition", message })
    }
  }))

it.scoped("a JWT key that cannot verify anything fails the layer with InvalidJwtKey, before anything starts", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const base = {
      ...resolveServerConfig({ port: 0 }, {}),
      databaseUrl: Redacted.make(`file:${join(dir, "auth.db")}`),
      logLevel: LogLevel.None
    }
    const withJwt = (secret: string, algorithms?: ReadonlyArray<string>) => ({
      ...base,
      auth: {
        production: false,
        jwt: { secret: Redacted.make(secret), algorithms, defaultPrivate: false, publicRoutes: [] }
      }
    })
    const wrongFamily = yield* Effect.flip(
      Layer.build(ServiceLive(defineApp({}), withJwt("a-shared-secret-0123456789", ["RS256"])))
    )
    expect(wrongFamily).toMatchObject({
      _tag: "InvalidJwtKey",
      message: "auth.verifyOptions.algorithms: none of RS256 fits the configured key"
    })
    const unreadable = yield* Effect.flip(
      Layer.build(ServiceLive(defineApp({}), withJwt("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----")))
    )
    expect(unreadable).toMatchObject({ _tag: "InvalidJwtKey" })
    expect(unreadable.message).toMatch(/^the public key cannot be read: /)
    expect(unreadable.message).not.toContain("nope")
  }))

it.scoped("LOG_FORMAT and LOG_LEVEL apply to an embedding program, through ServiceLive or ServicesLive alone", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const lines: Array<string> = []
    const log = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) =>
      void lines.push(args.map(String).join(" "))
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => log.mockRestore()))
    const app = defineApp({ agents: [herald], workflows: [announce] })
    type Within = (
      config: ServerConfigShape
    ) => <E>(effect: Effect.Effect<void, E, Scope.Scope>) => Effect.Effect<void, unknown, Scope.Scope>
    const layers: ReadonlyArray<readonly [string, Within]> = [
      ["ServiceLive", (config) => Effect.provide(ServiceLive(app, config))],
      ["ServicesLive", (config) => Effect.provide(ServicesLive(app, config))]
    ]
    for (const [name, within] of layers) {
      const config = {
        ...resolveServerConfig({ port: 0, enableSwaggerUI: false }, { LOG_FORMAT: "json", LOG_LEVEL: "warn" }),
        databaseUrl: Redacted.make(`file:${join(dir, `${name}.db`)}`)
      }
      lines.length = 0
      // As the README's program runs it: NodeRuntime.runMain installs Effect's pretty logger.
      yield* Effect.scoped(
        Effect.gen(function*() {
          yield* Effect.logInfo(`${name}: an info line`)
          yield* Effect.logWarning(`${name}: a warning`)
        }).pipe(within(config), Effect.provide(Logger.pretty))
      )
      const mine = lines.filter((line) => line.includes(name))
      expect(mine, name).toHaveLength(1)
      expect(JSON.parse(mine[0]!), name).toMatchObject({ message: `${name}: a warning`, logLevel: "WARN" })
    }
  }))
