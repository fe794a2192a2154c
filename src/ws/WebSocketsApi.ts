import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Forbidden, Unauthorized, UpgradeRequired } from "../http/Errors.js"
import { SystemLogFilters } from "../observability/ObservabilityApi.js"

const Upgrade = Schema.Unknown.annotations({ description: "101 Switching Protocols: a WebSocket" })

/** A console socket: its key (`?key=` in production) checked by the handler before the upgrade. */
const consoleSocket = <const Name extends string, const Path extends HttpApiEndpoint.PathSegment>(
  name: Name,
  path: Path
) =>
  HttpApiEndpoint.get(name, path)
    .addSuccess(Upgrade, { status: 101 })
    .addError(Unauthorized)
    .addError(UpgradeRequired)
    .addError(Forbidden)
    .annotate(RouteClassAnnotation, "console")

/**
 * WebSocket handshakes cannot carry headers, so credentials come as query parameters and each
 * handler checks them itself before upgrading (these routes have no Authentication middleware).
 */
export class WebSocketsApi extends HttpApiGroup.make("websockets")
  .add(
    HttpApiEndpoint.get("echoSocket", "/ws")
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String) }))
      .addSuccess(Upgrade, { status: 101 })
      .addError(Unauthorized)
      .addError(UpgradeRequired)
      .annotate(RouteClassAnnotation, "management")
      .annotate(OpenApi.Summary, "Connection test: echoes JSON messages (?token=<JWT>)")
  )
  .add(
    consoleSocket("logsSocket", "/ws/logs")
      .setUrlParams(Schema.Struct({
        ...SystemLogFilters.fields,
        key: Schema.optional(Schema.String),
        dev: Schema.optional(Schema.String)
      }))
      .annotate(OpenApi.Summary, "Live logs: an initial batch, then each new matching entry (?key= in production)")
  )
  .add(
    consoleSocket("observabilitySocket", "/ws/observability")
      .setUrlParams(Schema.Struct({
        entityType: Schema.optional(Schema.Literal("agent", "workflow")),
        entityId: Schema.optional(Schema.String),
        key: Schema.optional(Schema.String),
        dev: Schema.optional(Schema.String)
      }))
      .annotate(OpenApi.Summary, "Live span starts and ends and logs of one entity (?key= in production)")
  )
  .annotate(OpenApi.Title, "WebSockets")
{}
