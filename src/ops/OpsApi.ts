import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { BadRequest, ExecutionFailed, Forbidden, ValidationError } from "../http/Errors.js"
import { envValueProblem } from "./EnvFile.js"
import { keyLengthProblem, MAX_KEY_LENGTH } from "./ObservabilitySetup.js"
import { InstallReport, UpdateReport } from "./UpdatesSchemas.js"

export const InstallRequest = Schema.Struct({
  packageName: Schema.optional(Schema.String).annotations({
    description: "one of the service's dependencies; without it, every outdated one"
  })
})

const Key = Schema.String.pipe(
  Schema.filter((text) => keyLengthProblem(text) ?? true, { jsonSchema: { minLength: 1, maxLength: MAX_KEY_LENGTH } }),
  Schema.filter((text) => envValueProblem(text) ?? true)
)

/** Documents the header console writes need outside production (the console guard checks it). */
const ConsoleWriteHeaders = Schema.Struct({
  "x-service-dev": Schema.optional(Schema.String).annotations({
    description: "\"true\": required outside production, so that a cross-site form cannot call this route"
  })
})

export const SetupRequest = Schema.Struct({ publicKey: Key, secretKey: Key })

export const SetupResult = Schema.Struct({
  file: Schema.String.annotations({ description: "the env file written" }),
  keys: Schema.Array(Schema.String)
}).annotations({ identifier: "ObservabilitySetupResult" })

export class OpsApi extends HttpApiGroup.make("ops")
  .add(
    HttpApiEndpoint.get("getUpdates", "/updates").addSuccess(Success(UpdateReport)).addError(ExecutionFailed)
      .annotate(OpenApi.Summary, "Outdated direct dependencies, from the registry npm is configured for (cached)")
  )
  .add(
    HttpApiEndpoint.post("installUpdates", "/updates").setPayload(InstallRequest).setHeaders(ConsoleWriteHeaders)
      .addSuccess(Success(InstallReport))
      .addError(ValidationError).addError(BadRequest).addError(ExecutionFailed)
      .annotate(
        OpenApi.Summary,
        "Install the latest version of one dependency, or of every outdated one (npm, one at a time)"
      )
  )
  .add(
    HttpApiEndpoint.post("setupObservability", "/setup-observability").setPayload(SetupRequest).setHeaders(
      ConsoleWriteHeaders
    )
      .addSuccess(Success(SetupResult)).addError(ValidationError).addError(ExecutionFailed)
      .annotate(
        OpenApi.Summary,
        "Write SERVICE_PUBLIC_KEY and SERVICE_SECRET_KEY into .env (mode 0600), keeping its other lines"
      )
  )
  .annotate(OpenApi.Title, "Updates and setup")
  .annotate(RouteClassAnnotation, "console")
  .addError(Forbidden)
  .middleware(Authentication)
{}
