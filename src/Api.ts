import { HttpApi, OpenApi } from "@effect/platform"
import { AgentsApi } from "./agents/AgentsApi.js"
import { serviceInfo } from "./core/serviceInfo.js"
import { DocsApi } from "./docs/DocsApi.js"
import { describeOpenApi } from "./docs/openApiDocument.js"
import { HealthApi } from "./health/HealthApi.js"
import { BadRequest, InternalError, NotFound, PayloadTooLarge, Unauthorized, ValidationError } from "./http/Errors.js"
import { McpApi } from "./mcp/McpApi.js"
import { ObservabilityApi } from "./observability/ObservabilityApi.js"
import { OpsApi } from "./ops/OpsApi.js"
import { ToolsApi } from "./tools/ToolsApi.js"
import { WebhooksApi } from "./webhooks/WebhooksApi.js"
import { WorkflowsApi } from "./workflows/api/WorkflowsApi.js"
import { SchedulesApi } from "./workflows/schedules/SchedulesApi.js"
import { WebSocketsApi } from "./ws/WebSocketsApi.js"

/** The whole HTTP contract: validation, the OpenAPI document and the typed client all derive from it. */
export class ServiceApi extends HttpApi.make("service")
  .add(DocsApi)
  .add(HealthApi)
  .add(AgentsApi)
  .add(ToolsApi)
  .add(WorkflowsApi)
  .add(SchedulesApi)
  .add(WebhooksApi)
  .add(McpApi)
  .add(OpsApi)
  .add(ObservabilityApi)
  .add(WebSocketsApi)
  // Any request can meet these, whichever endpoint it addresses.
  .addError(ValidationError)
  .addError(BadRequest)
  .addError(NotFound)
  .addError(PayloadTooLarge)
  .addError(InternalError)
  .addError(Unauthorized)
  .annotateContext(OpenApi.annotations({
    title: serviceInfo.title,
    version: serviceInfo.version,
    description: "Agents, durable workflows and directly callable tools over HTTP. " +
      "Every JSON response is an envelope: {success: true, data} or {success: false, error}.",
    transform: describeOpenApi
  }))
{}
