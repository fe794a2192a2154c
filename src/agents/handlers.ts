import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../http/Api.js"
import { numbered, sseBytesResponse, sseResponse } from "../http/sse.js"
import { AgentRegistry } from "./AgentRegistry.js"

const HISTORY_MAX = 100

const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const host = request.headers["host"] ?? "localhost"
  const proto = request.headers["x-forwarded-proto"] ?? "http"
  return `${proto}://${host}`
})

export const AgentsHandlers = HttpApiBuilder.group(ServiceApi, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* AgentRegistry
    return handlers
      .handle("listAgents", () => agents.list)
      .handle("getAgent", ({ path }) => agents.details(path.id))
      .handle("generateText", ({ path, payload }) => agents.text(path.id, payload))
      .handle("streamText", ({ path, payload }) =>
        Effect.flatMap(agents.stream(path.id, payload), (events) => sseResponse(numbered(events))))
      .handle("chat", ({ path, payload }) =>
        Effect.flatMap(agents.chat(path.id, payload), (bytes) =>
          sseBytesResponse(bytes, { "x-vercel-ai-ui-message-stream": "v1" })))
      .handle("generateObject", ({ path, payload }) => agents.object(path.id, payload))
      .handle("streamObject", ({ path, payload }) =>
        Effect.flatMap(agents.streamObject(path.id, payload), (events) => sseResponse(numbered(events))))
      .handle("agentHistory", ({ path, urlParams }) =>
        agents.history(path.id, {
          page: urlParams.page ?? 0,
          limit: Math.min(Math.max(urlParams.limit ?? 10, 1), HISTORY_MAX),
          ...(urlParams.userId === undefined ? {} : { userId: urlParams.userId }),
          ...(urlParams.conversationId === undefined ? {} : { conversationId: urlParams.conversationId })
        }))
      .handle("agentCard", ({ path }) => Effect.flatMap(baseUrl, (url) => agents.card(path.id, url)))
  }))
