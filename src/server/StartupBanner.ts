import { HttpServer } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import { type AuthSettings, consoleAccessOf, isPublicKey } from "../config/AuthSettings.js"
import type { ModelSettings } from "../config/ModelSettings.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { sqliteFile, storageKind } from "../storage/Sql.js"

/** A URL without its user, password, query and fragment: what may be printed of a configured address. */
const withoutCredentials = (raw: string): string | undefined => {
  try {
    const url = new URL(raw)
    return `${url.protocol}//${url.host}${url.pathname === "/" ? "" : url.pathname}`
  } catch {
    return undefined
  }
}

const describeModel = (model: ModelSettings): string => {
  if (model.provider === "builtin") {
    return `builtin/${model.model} (deterministic, offline; set AI_PROVIDER for a real model)`
  }
  const at = model.baseUrl === undefined ? "" : ` at ${withoutCredentials(model.baseUrl) ?? "(AI_BASE_URL)"}`
  return `${model.model} (${model.provider}${at})`
}

const describeStorage = (databaseUrl: Redacted.Redacted<string>): string => {
  if (storageKind(databaseUrl) === "sqlite") return `SQLite ${sqliteFile(databaseUrl) ?? "in memory"}`
  try {
    const url = new URL(Redacted.value(databaseUrl))
    return `Postgres ${url.host}${url.pathname}`
  } catch {
    return "Postgres"
  }
}

const describeConsole = (auth: AuthSettings, host: string): string => {
  switch (consoleAccessOf(auth, host)) {
    case "open":
      return "console routes open (not production, loopback)"
    case "key":
      return "console routes need x-console-access-key"
    case "closed":
      return auth.production
        ? "console routes closed (production without SERVICE_CONSOLE_ACCESS_KEY)"
        : `console routes closed (${host} is not loopback and SERVICE_CONSOLE_ACCESS_KEY is not set)`
  }
}

const describeAuth = (auth: AuthSettings, host: string): string => {
  const console = describeConsole(auth, host)
  if (auth.jwt === undefined) return `none, every route is public; ${console}`
  const key = isPublicKey(auth.jwt.secret) ? "public key" : "shared secret"
  const scope = auth.jwt.defaultPrivate
    ? `every route needs a bearer token except ${auth.jwt.publicRoutes.length} public routes`
    : "execution routes need a bearer token"
  return `JWT (${key}), ${scope}; ${console}`
}

/**
 * The start-up banner: where the service listens, its console, explorer and OpenAPI document, the default model,
 * the store and how callers authenticate. Only names and addresses: never a key, secret or password.
 */
export const startupBanner = (config: ServerConfigShape, url: string): string =>
  [
    `Listening on ${url}`,
    `  console   ${url}/console`,
    `  explorer  ${config.enableSwaggerUI ? `${url}/ui` : "off (enableSwaggerUI)"}`,
    `  OpenAPI   ${url}/doc`,
    `  model     ${describeModel(config.model)}`,
    `  storage   ${describeStorage(config.databaseUrl)}`,
    `  auth      ${describeAuth(config.auth, config.host)}`
  ].join("\n")

/** Logs the banner (at info) once `layer` serves; in place of the platform's `withLogAddress`. */
export const withStartupBanner = (config: ServerConfigShape) => <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.effectDiscard(HttpServer.addressFormattedWith((url) => Effect.log(startupBanner(config, url)))).pipe(
    Layer.provideMerge(layer)
  )
