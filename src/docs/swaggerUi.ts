import { HttpApi, HttpApiBuilder } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { withPageSecurity } from "./pageSecurity.js"

/**
 * Swagger UI at `path`, built by its first request. The platform's page inlines about 2 MB of script
 * and embeds the OpenAPI document, both paid at start-up by `HttpApiSwagger.layer`; here its module is
 * imported on demand and its layer mounted on a router of its own, which then answers the request,
 * with a CSP that runs only its own inline script and forbids framing.
 */
export const SwaggerUiLive = (path: `/${string}`) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const api = yield* HttpApi.Api
      const page = yield* Effect.cached(Effect.scoped(Effect.gen(function*() {
        const { layer } = yield* Effect.promise(() => import("@effect/platform/HttpApiSwagger"))
        const built = yield* Layer.build(Layer.provideMerge(layer({ path }), HttpApiBuilder.Router.Live)).pipe(
          Effect.provideService(HttpApi.Api, api)
        )
        return yield* Context.get(built, HttpApiBuilder.Router).router
      })))
      yield* router.get(
        path,
        Effect.map(Effect.flatten(page), (response) => withPageSecurity(response, { inlineStyles: true }))
      )
    })
  )
