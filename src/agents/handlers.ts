import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { CurrentCaller } from "../auth/Authentication.js"
import { actingUserId } from "../auth/Ownership.js"
import type { GenerationOptions } from "./AgentsSchemas.js"
import { ServiceApi } from "../Api.js"
import { fixedJsonResponse } from "../http/fixedResponse.js"
import { numbered, sseBytesResponse, sseResponse } from "../http/sse.js"
import { webSseResponse } from "../http/webSse.js"
import { AgentRegistry } from "./AgentRegistry.js"
import { AgentList } from "./AgentsApi.js"
import { fromSdkChatRequest, isSdkChatRequest } from "./ChatSchemas.js"

const HISTORY_MAX = 100

const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const host = request.headers["host"] ?? "localhost"
  const proto = request.headers["x-forwarded-proto"] ?? "http"
  return `${proto}://${host}`
})

/**
 * The request with the authenticated user (null when anonymous), which reaches instructions and tools,
 * and, under authentication, its owner: `options.userId` may only name the caller, and the call's
 * conversation and history entry are the caller's.
 */
export const withUser = <A extends { readonly options?: GenerationOptions | undefined }>(payload: A) =>
  Effect.gen(function*() {
    const caller = yield* CurrentCaller
    const userId = yield* actingUserId(caller, payload.options?.userId)
    if (!caller.owned) return { ...payload, user: caller.user }
    const { userId: _, ...options } = payload.options ?? {}
    return {
      ...payload,
      options: userId === undefined ? options : { ...options, userId },
      user: caller.user,
      owner: { userId: caller.userId }
    }
  })

export const AgentsHandlers = HttpApiBuilder.group(ServiceApi, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* AgentRegistry
    // The agents are fixed at start-up, and so is their list.
    const listed = yield* Effect.flatMap(agents.list, (list) => fixedJsonResponse(AgentList, list))
    return handlers
      .handle("listAgents", () => Effect.succeed(listed))
      .handle("getAgent", ({ path }) => agents.details(path.id))
      .handle("generateText", ({ path, payload }) => Effect.flatMap(withUser(payload), (request) => agents.text(path.id, request)))
      .handle("streamText", ({ path, payload }) =>
        withUser(payload).pipe(
          Effect.flatMap((request) => agents.stream(path.id, request)),
          Effect.flatMap((events) => webSseResponse(events))
        ))
      .handle("chat", ({ path, payload }) =>
        withUser(isSdkChatRequest(payload) ? fromSdkChatRequest(payload) : payload).pipe(
          Effect.flatMap((request) => agents.chat(path.id, request)),
          Effect.flatMap((bytes) => sseBytesResponse(bytes, { "x-vercel-ai-ui-message-stream": "v1" }))
        ))
      .handle("generateObject", ({ path, payload }) => Effect.flatMap(withUser(payload), (request) => agents.object(path.id, request)))
      .handle("streamObject", ({ path, payload }) =>
        withUser(payload).pipe(
          Effect.flatMap((request) => agents.streamObject(path.id, request)),
          Effect.flatMap((events) => sseResponse(numbered(events)))
        ))
      .handle("agentHistory", ({ path, urlParams }) =>
        Effect.flatMap(CurrentCaller, ({ visibility }) => agents.history(path.id, {
          ...(visibility.all ? {} : { owner: { userId: visibility.userId } }),
          page: urlParams.page ?? 0,
          limit: Math.min(Math.max(urlParams.limit ?? 10, 1), HISTORY_MAX),
          ...(urlParams.userId === undefined ? {} : { userId: urlParams.userId }),
          ...(urlParams.conversationId === undefined ? {} : { conversationId: urlParams.conversationId })
        })))
      .handle("deleteConversation", ({ path }) =>
        Effect.flatMap(CurrentCaller, ({ visibility }) =>
          agents.forgetConversation(path.id, path.conversationId, visibility.all ? undefined : { userId: visibility.userId })))
      .handle("agentCard", ({ path }) => Effect.flatMap(baseUrl, (url) => agents.card(path.id, url)))
  }))
