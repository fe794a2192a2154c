import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema, SchemaAST } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { Conflict, ExecutionFailed, Forbidden, GuardrailBlocked, NotFound, ValidationError } from "../http/Errors.js"
import { QueryInt } from "../http/Query.js"
import { EventStream } from "../http/Schemas.js"
import {
  AgentCard,
  AgentDetails,
  AgentSummary,
  ApprovalsRequest,
  CallRequestBody,
  ConversationDeleted,
  GenerateRequest,
  HistoryEntry,
  HistoryPage,
  ObjectRequest,
  TextResult
} from "./AgentsSchemas.js"
import { ChatPayload } from "./ChatSchemas.js"
import { WorkingMemoryDeleted, WorkingMemoryQuery, WorkingMemoryView } from "./workingMemory/schemas.js"

const IdPath = Schema.Struct({ id: Schema.String })

const call = <const Name extends string, const Path extends HttpApiEndpoint.PathSegment>(name: Name, path: Path) =>
  HttpApiEndpoint.post(name, path).setPath(IdPath).addError(ValidationError).addError(NotFound).addError(
    ExecutionFailed
  ).addError(Forbidden)
    .addError(GuardrailBlocked)
    .addError(Conflict)
    .annotate(RouteClassAnnotation, "execution")

// Bodies any agent answers, pre-filled by the explorer (the agent ids come from the app: openApiExamples.ts).
const firstClick = { input: "Hello! What can you do?" }
// Decoded as one struct (which of the two a body is gets checked where the call is prepared); documented
// as the union of a call and approvals answered, a call first (pre-filled).
const TextRequest = CallRequestBody.annotations({
  [SchemaAST.SurrogateAnnotationId]:
    Schema.Union(GenerateRequest.annotations({ examples: [firstClick] }), ApprovalsRequest).ast
})
const ChatRequest = ChatPayload.annotations({ examples: [firstClick] })
const ObjectRequestExample = ObjectRequest.annotations({
  examples: [{
    input: "Describe Paris in a few words",
    schema: { type: "object", properties: { description: { type: "string" } }, required: ["description"] }
  }]
})

/** GET /agents's success: its handler encodes it once at start-up. */
export const AgentList = Success(Schema.Array(AgentSummary))

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("listAgents", "/agents").addSuccess(AgentList).annotate(
      OpenApi.Summary,
      "List the registered agents"
    )
  )
  .add(
    HttpApiEndpoint.get("getAgent", "/agents/:id").setPath(IdPath).addSuccess(Success(AgentDetails)).addError(NotFound)
      .annotate(OpenApi.Summary, "An agent's details")
  )
  .add(
    call("generateText", "/agents/:id/text").setPayload(TextRequest).addSuccess(Success(TextResult))
      .annotate(OpenApi.Summary, "Generate text (tools run as needed)")
  )
  .add(
    call("streamText", "/agents/:id/stream").setPayload(TextRequest).addSuccess(EventStream)
      .annotate(
        OpenApi.Summary,
        "Stream text as SSE: text-delta, reasoning-delta, tool-call, tool-result, finish, error"
      )
  )
  .add(
    call("chat", "/agents/:id/chat").setPayload(ChatRequest).addSuccess(EventStream)
      .annotate(
        OpenApi.Summary,
        "AI SDK UI message stream (v1), for useChat: {input, options} or the SDK's own {id, messages, trigger}"
      )
  )
  .add(
    call("generateObject", "/agents/:id/object").setPayload(ObjectRequestExample).addSuccess(Success(Schema.Unknown))
      .annotate(OpenApi.Summary, "Generate an object matching the given JSON Schema")
  )
  .add(
    call("streamObject", "/agents/:id/stream-object").setPayload(ObjectRequestExample).addSuccess(EventStream)
      .annotate(OpenApi.Summary, "Stream a growing object as SSE: partial frames, then finish")
  )
  .add(
    HttpApiEndpoint.get("agentHistory", "/agents/:id/history")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct({
        page: Schema.optional(QueryInt),
        limit: Schema.optional(QueryInt),
        userId: Schema.optional(Schema.String),
        conversationId: Schema.optional(Schema.String)
      }))
      .addSuccess(Success(HistoryPage))
      .addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "The agent's past calls, newest first (limit 1..100, default 10); inputs and outputs over 8 KiB cut (see truncated)"
      )
  )
  .add(
    HttpApiEndpoint.get("agentHistoryEntry", "/agents/:id/history/:entryId")
      .setPath(Schema.Struct({ id: Schema.String, entryId: Schema.String }))
      .addSuccess(Success(HistoryEntry))
      .addError(NotFound)
      .annotate(
        OpenApi.Summary,
        "One past call whole (its input and output uncut); under authentication, the caller's own"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteConversation", "/agents/:id/conversations/:conversationId")
      .annotate(RouteClassAnnotation, "execution")
      .setPath(Schema.Struct({ id: Schema.String, conversationId: Schema.String }))
      .addSuccess(Success(ConversationDeleted))
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Delete a conversation: its memory (messages) and its history entries")
  )
  .add(
    HttpApiEndpoint.get("getWorkingMemory", "/agents/:id/working-memory").setPath(IdPath).setUrlParams(
      WorkingMemoryQuery
    )
      .addSuccess(Success(WorkingMemoryView)).addError(NotFound).addError(ValidationError).addError(Forbidden)
      .annotate(
        OpenApi.Summary,
        "The caller's working memory record (per user, or per conversationId); value null when none"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteWorkingMemory", "/agents/:id/working-memory").setPath(IdPath).setUrlParams(
      WorkingMemoryQuery
    )
      .annotate(RouteClassAnnotation, "execution")
      .addSuccess(Success(WorkingMemoryDeleted)).addError(NotFound).addError(ValidationError).addError(Forbidden)
      .annotate(OpenApi.Summary, "Delete the caller's working memory record (per user, or per conversationId)")
  )
  .add(
    HttpApiEndpoint.get("agentCard", "/agents/:id/card").setPath(IdPath).addSuccess(Success(AgentCard)).addError(
      NotFound
    )
      .annotate(RouteClassAnnotation, "discovery")
      .annotate(OpenApi.Summary, "A2A agent card for discovery")
  )
  .annotate(OpenApi.Title, "Agents")
  .annotate(RouteClassAnnotation, "management")
  .middleware(Authentication)
{}
