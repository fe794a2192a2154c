import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { ServiceUnavailable } from "../http/Errors.js"

export const HealthReport = Schema.Struct({
  status: Schema.Literal("up"),
  instanceId: Schema.String.annotations({ description: "the instance that answered (SERVICE_INSTANCE_ID)" })
}).annotations({ identifier: "HealthReport" })

export const ReadyReport = Schema.Struct({
  status: Schema.Literal("ready"),
  instanceId: Schema.String.annotations({ description: "the instance that answered (SERVICE_INSTANCE_ID)" })
}).annotations({ identifier: "ReadyReport" })

/** Probes for load balancers and orchestrators: public whatever the auth configuration, no authentication step. */
export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health").addSuccess(Success(HealthReport))
      .annotate(OpenApi.Summary, "Liveness: the process is up and serving HTTP (checks nothing else)")
  )
  .add(
    HttpApiEndpoint.get("ready", "/ready").addSuccess(Success(ReadyReport)).addError(ServiceUnavailable)
      .annotate(
        OpenApi.Summary,
        "Readiness: the store answers, the migrations are done and the instance is not draining; 503 with the reason otherwise"
      )
  )
  .annotate(OpenApi.Title, "Health")
  .annotate(RouteClassAnnotation, "probe")
{}
