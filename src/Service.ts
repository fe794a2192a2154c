import { Layer, Logger } from "effect"
import type { ServiceApp } from "./App.js"
import { ServerConfig, type ServerConfigShape } from "./config/ServerConfig.js"
import { NodeServerLive } from "./http/NodeServer.js"
import { HttpLive } from "./http/Server.js"
import { SqlLive } from "./storage/Sql.js"
import { ToolRunnerLive } from "./tools/ToolRunner.js"

/** Every service of the app, without the HTTP server: for embedding or for tests. */
export const ServicesLive = (app: ServiceApp, config: ServerConfigShape) =>
  Layer.mergeAll(
    Layer.succeed(ServerConfig, config),
    ToolRunnerLive(app.tools.map((tool) => ({ tool, agents: [] }))),
    SqlLive(config.databaseUrl)
  )

/** The whole service listening on config.host:config.port. `Layer.launch` it to run. */
export const ServiceLive = (app: ServiceApp, config: ServerConfigShape) =>
  HttpLive(config).pipe(
    Layer.provide(ServicesLive(app, config)),
    Layer.provide(NodeServerLive(config)),
    Layer.provide(Logger.minimumLogLevel(config.logLevel))
  )
