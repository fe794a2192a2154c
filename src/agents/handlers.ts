import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { Effect, Option } from "effect"
import { isIP } from "node:net"
import { hostname } from "node:os"
import { ServiceApi } from "../Api.js"
import { CurrentCaller } from "../auth/Authentication.js"
import { actingUserId } from "../auth/Ownership.js"
import { ServerConfig, type ServerConfigShape } from "../config/ServerConfig.js"
import { fixedJsonResponse } from "../http/fixedResponse.js"
import { numbered, sseBytesResponse, sseResponse } from "../http/sse.js"
import { webSseResponse } from "../http/webSse.js"
import { AgentRegistry } from "./AgentRegistry.js"
import { AgentList } from "./AgentsApi.js"
import type { GenerationOptions } from "./AgentsSchemas.js"
import { fromSdkChatRequest, isSdkChatRequest } from "./ChatSchemas.js"

const HISTORY_MAX = 100

/**
 * Where the service says it is (the A2A card's url): the configured public URL (http or https, checked
 * at start-up), else the listening address; never the request's Host or X-Forwarded-Proto, which a
 * caller writes. A wildcard address names this machine.
 */
const serviceUrl = (config: ServerConfigShape, address: HttpServer.Address): string => {
  if (config.publicUrl !== undefined) return config.publicUrl.replace(/\/+$/, "")
  if (address._tag === "UnixAddress") return "http://localhost"
  const host = address.hostname === "0.0.0.0" || address.hostname === "::" ? hostname() : address.hostname
  return `http://${isIP(host) === 6 ? `[${host}]` : host}:${address.port}`
}

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

/** Whose working memory a route names: under authentication the caller's own (`userId` may only name them). */
const workingMemoryCaller = (
  query: { readonly conversationId?: string | undefined; readonly userId?: string | undefined }
) =>
  Effect.gen(function*() {
    const caller = yield* CurrentCaller
    const userId = yield* actingUserId(caller, query.userId)
    return {
      userId,
      conversationId: query.conversationId,
      ...(caller.owned ? { owner: { userId: caller.userId } } : {})
    }
  })

export const AgentsHandlers = HttpApiBuilder.group(ServiceApi, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* AgentRegistry
    const config = yield* ServerConfig
    const configured: HttpServer.Address = { _tag: "TcpAddress", hostname: config.host, port: config.port }
    // The agents are fixed at start-up, and so is their list.
    const listed = yield* Effect.flatMap(agents.list, (list) => fixedJsonResponse(AgentList, list))
    return handlers
      .handle("listAgents", () => Effect.succeed(listed))
      .handle("getAgent", ({ path }) => agents.details(path.id))
      .handle("generateText", ({ path, payload }) =>
        Effect.flatMap(withUser(payload), (request) => agents.text(path.id, request)))
      .handle("streamText", ({ path, payload }) =>
        withUser(payload).pipe(
          Effect.flatMap((request) =>
            agents.stream(path.id, request)
          ),
          Effect.flatMap((events) => webSseResponse(events))
        ))
      .handle("chat", ({ path, payload }) =>
        withUser(isSdkChatRequest(payload) ? fromSdkChatRequest(payload) : payload).pipe(
          Effect.flatMap((request) =>
            agents.chat(path.id, request)
          ),
          Effect.flatMap((bytes) => sseBytesResponse(bytes, { "x-vercel-ai-ui-message-stream": "v1" }))
        ))
      .handle("generateObject", ({ path, payload }) =>
        Effect.flatMap(withUser(payload), (request) =>
          agents.object(path.id, request)))
      .handle("streamObject", ({ path, payload }) =>
        withUser(payload).pipe(
          Effect.flatMap((request) =>
            agents.streamObject(path.id, request)
          ),
          Effect.flatMap((events) => sseResponse(numbered(events)))
        ))
      .handle("agentHistory", ({ path, urlParams }) =>
        Effect.flatMap(CurrentCaller, ({ visibility }) =>
          agents.history(path.id, {
            ...(visibility.all ? {} : { owner: { userId: visibility.userId } }),
            page: urlParams.page ?? 0,
            limit: Math.min(Math.max(urlParams.limit ?? 10, 1), HISTORY_MAX),
            ...(urlParams.userId === undefined ? {} : { userId: urlParams.userId }),
            ...(urlParams.conversationId === undefined ? {} : { conversationId: urlParams.conversationId })
          })))
      .handle("agentHistoryEntry", ({ path }) =>
        Effect.flatMap(CurrentCaller, ({ visibility }) =>
          agents.historyEntry(path.id, path.entryId, visibility.all ? undefined : { userId: visibility.userId })))
      .handle("deleteConversation", ({ path }) =>
        Effect.flatMap(CurrentCaller, ({ visibility }) =>
          agents.forgetConversation(
            path.id,
            path.conversationId,
            visibility.all ? undefined : { userId: visibility.userId }
          )))
      .handle("getWorkingMemory", ({ path, urlParams }) =>
        Effect.flatMap(workingMemoryCaller(urlParams), (caller) =>
          agents.workingMemory(path.id, caller)))
      .handle("deleteWorkingMemory", ({ path, urlParams }) =>
        Effect.flatMap(workingMemoryCaller(urlParams), (caller) =>
          agents.forgetWorkingMemory(path.id, caller)))
      .handle("agentCard", ({ path }) =>
        // The server is in every request's context; read as an option so the group does not require it.
        Effect.flatMap(Effect.serviceOption(HttpServer.HttpServer), (server) =>
          agents.card(
            path.id,
            serviceUrl(
              config,
              Option.match(server, {
                onNone: () =>
                  configured,
                onSome: ({ address }) =>
                  address
              })
            )
          )))
  }))
