/**
 * The floor of our stack: an Effect HttpApi app with one GET route answering a small JSON list,
 * HttpApiBuilder + NodeHttpServer and nothing else. Run as its own process:
 * `node .build/scripts/bench/minimal-httpapi.js --port 4101`.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"
import { AGENT_LIST, portArgument } from "./fixture.js"

const Agent = Schema.Struct({ id: Schema.String, name: Schema.String, purpose: Schema.String, status: Schema.String })

const Api = HttpApi.make("minimal").add(
  HttpApiGroup.make("agents").add(HttpApiEndpoint.get("list", "/agents").addSuccess(Schema.Array(Agent)))
)

const AgentsLive = HttpApiBuilder.group(
  Api,
  "agents",
  (handlers) => handlers.handle("list", () => Effect.succeed(AGENT_LIST))
)

const ServerLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(AgentsLive))),
  Layer.provide(NodeHttpServer.layer(createServer, { port: portArgument(process.argv), host: "127.0.0.1" }))
)

NodeRuntime.runMain(Layer.launch(ServerLive))
