import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { Conflict, ExecutionFailed, NotFound, ValidationError } from "../http/Errors.js"
import { JsonSchemaObject } from "../json-schema/JsonSchemaObject.js"

export const ToolInfo = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  tags: Schema.Array(Schema.String),
  parameters: JsonSchemaObject,
  status: Schema.Literal("ready"),
  agents: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
}).annotations({ identifier: "Tool" })

export const ToolExecutionResult = Schema.Struct({
  toolName: Schema.String,
  result: Schema.Unknown,
  executionTime: Schema.Number.annotations({ description: "milliseconds" }),
  timestamp: Schema.String.annotations({ description: "ISO 8601 start time" })
}).annotations({ identifier: "ToolExecutionResult" })

export const ExecuteToolPayload = Schema.Struct({
  input: Schema.optionalWith(Schema.Unknown, { default: () => ({}) }).annotations({
    description: "validated against the tool's parameters"
  }),
  context: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "forwarded to the tool"
  })
})

export class ToolsApi extends HttpApiGroup.make("tools")
  .add(
    HttpApiEndpoint.get("listTools", "/tools")
      .addSuccess(Success(Schema.Array(ToolInfo)))
      .annotate(OpenApi.Summary, "List every tool, with the agents that own it")
  )
  .add(
    HttpApiEndpoint.post("executeTool", "/tools/:name/execute")
      .setPath(Schema.Struct({ name: Schema.String }))
      .setPayload(ExecuteToolPayload)
      .addSuccess(Success(ToolExecutionResult))
      .addError(ValidationError)
      .addError(NotFound)
      .addError(ExecutionFailed)
      .addError(Conflict)
      .annotate(RouteClassAnnotation, "execution")
      .annotate(OpenApi.Summary, "Execute a tool directly, without an agent")
  )
  .annotate(OpenApi.Title, "Tools")
  .annotate(RouteClassAnnotation, "management")
  .middleware(Authentication)
{}
