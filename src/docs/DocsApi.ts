import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"

const Html = Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/html" }))

export class DocsApi extends HttpApiGroup.make("docs")
  .add(
    HttpApiEndpoint.get("landing", "/")
      .addSuccess(Html)
      .annotate(OpenApi.Summary, "Landing page with links to the documentation and the lists")
  )
  .add(
    HttpApiEndpoint.get("openApi", "/doc")
      .addSuccess(
        Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
          identifier: "OpenApiDocument",
          description: "This document (OpenAPI 3.1)"
        })
      )
      .annotate(OpenApi.Summary, "The OpenAPI 3.1 description of this service")
  )
  .annotate(OpenApi.Title, "Documentation")
  .annotate(RouteClassAnnotation, "documentation")
  .middleware(Authentication)
{}
