import { FetchHttpClient, HttpApiClient, HttpServer } from "@effect/platform"
import { expect, it } from "@effect/vitest"
import { Context, Effect, Layer, LogLevel, Schema } from "effect"
import { join } from "node:path"
import { defineApp, defineTool, resolveServerConfig, ServiceApi, ServiceLive } from "../src/index.js"
import { tempDir } from "./support/TestServer.js"

// What an embedding program writes: its own tool, its own config, the service's layers.
const shout = defineTool({
  name: "shout",
  description: "Upper-cases a word",
  parameters: Schema.Struct({ word: Schema.String }),
  execute: ({ word }) => Effect.succeed({ loud: word.toUpperCase() })
})

it.scoped("another Effect program embeds the service with its own tools and config", () =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = {
      ...resolveServerConfig({ port: 0, enableSwaggerUI: false }, {}),
      databaseUrl: `file:${join(dir, "embedded.db")}`,
      logLevel: LogLevel.Warning
    }
    const context = yield* Layer.build(ServiceLive(defineApp({ tools: [shout] }), config))
    const address = Context.get(context, HttpServer.HttpServer).address
    const baseUrl = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`

    const client = yield* HttpApiClient.make(ServiceApi, { baseUrl }).pipe(Effect.provide(FetchHttpClient.layer))
    const tools = yield* client.tools.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(["shout"])
    const run = yield* client.tools.executeTool({ path: { name: "shout" }, payload: { input: { word: "effect" } } })
    expect(run.result).toEqual({ loud: "EFFECT" })
    const ui = yield* Effect.promise(() => fetch(`${baseUrl}/ui`))
    expect(ui.status).toBe(404)
  }))
