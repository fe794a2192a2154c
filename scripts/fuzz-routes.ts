/**
 * The POST routes of an HttpApi, as the fuzz sees them: read from the API definition itself, so a new
 * route is fuzzed without touching the fuzz.
 */
import { HttpApi, type HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Context, Option, type Schema, SchemaAST } from "effect"
import { type RouteClass, RouteClassAnnotation } from "../src/auth/RouteClass.js"

export type ResponseKind = "envelope" | "event-stream" | "protocol"

export interface FuzzRoute {
  /** `group.endpoint`, e.g. `agents.generateText`. */
  readonly name: string
  readonly group: string
  readonly path: string
  readonly pathParams: ReadonlyArray<string>
  readonly payload: Schema.Schema<unknown, unknown, never> | undefined
  readonly routeClass: RouteClass
  /** The endpoint itself declares a 500 (a tool, agent or workflow failure), beside the API-wide one. */
  readonly declares500: boolean
  /** What a 2xx answer is: the JSON envelope, an SSE stream, or a protocol of its own (MCP's JSON-RPC). */
  readonly responseKind: ResponseKind
  /** Where the payload takes a client-supplied JSON Schema object (the fuzz gives those real schemas). */
  readonly jsonSchemaPaths: ReadonlyArray<ReadonlyArray<string>>
}

const unionMembers = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.AST> =>
  SchemaAST.isUnion(ast) ? ast.types.flatMap(unionMembers) : [ast]

const declaresOwn500 = (errorAst: SchemaAST.AST): boolean =>
  unionMembers(errorAst).some((member) =>
    !SchemaAST.isNeverKeyword(member) && HttpApiSchema.getStatusErrorAST(member) === 500
  )

const isEnvelope = (ast: SchemaAST.AST): boolean =>
  SchemaAST.isTransformation(ast) && SchemaAST.isTypeLiteral(ast.from) &&
  ast.from.propertySignatures.some((property) => property.name === "success")

const responseKindOf = (
  successes: ReadonlyMap<number, { readonly ast: Option.Option<SchemaAST.AST> }>
): ResponseKind => {
  const asts = [...successes.values()].flatMap(({ ast }) => Option.toArray(ast))
  if (asts.length > 0 && asts.every(isEnvelope)) return "envelope"
  if (asts.some((ast) => HttpApiSchema.getEncoding(ast).contentType === "text/event-stream")) return "event-stream"
  return "protocol"
}

const isJsonSchemaNode = (ast: SchemaAST.AST): boolean =>
  Option.getOrUndefined(SchemaAST.getIdentifierAnnotation(ast)) === "JsonSchema"

/** Paths of the payload's fields typed as a JSON Schema object (through optional fields and unions). */
const jsonSchemaPaths = (
  ast: SchemaAST.AST,
  prefix: ReadonlyArray<string> = [],
  depth = 0
): Array<ReadonlyArray<string>> => {
  if (depth > 8) return []
  if (isJsonSchemaNode(ast)) return [prefix]
  switch (ast._tag) {
    case "Transformation":
      return jsonSchemaPaths(ast.to, prefix, depth + 1)
    case "Refinement":
      return jsonSchemaPaths(ast.from, prefix, depth + 1)
    case "Union":
      return ast.types.flatMap((member) => jsonSchemaPaths(member, prefix, depth + 1))
    case "Declaration":
      return ast.typeParameters.flatMap((member) => jsonSchemaPaths(member, prefix, depth + 1))
    case "TypeLiteral":
      return ast.propertySignatures.flatMap((property) =>
        typeof property.name === "string" ? jsonSchemaPaths(property.type, [...prefix, property.name], depth + 1) : []
      )
    default:
      return []
  }
}

const unique = (
  paths: ReadonlyArray<ReadonlyArray<string>>
) => [...new Map(paths.map((path) => [path.join("."), path])).values()]

/** Every POST endpoint of the API. */
export const postRoutes = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyArray<FuzzRoute> => {
  const routes: Array<FuzzRoute> = []
  HttpApi.reflect(api, {
    predicate: ({ endpoint }) => endpoint.method === "POST",
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations, successes }) => {
      const payload = Option.getOrUndefined(endpoint.payloadSchema) as
        | Schema.Schema<unknown, unknown, never>
        | undefined
      routes.push({
        name: `${group.identifier}.${endpoint.name}`,
        group: group.identifier,
        path: endpoint.path,
        pathParams: [...endpoint.path.matchAll(/:(\w+)/g)].map((match) => match[1]!),
        payload,
        routeClass: Context.getOrElse(mergedAnnotations, RouteClassAnnotation, () => "custom" as const),
        declares500: declaresOwn500(endpoint.errorSchema.ast),
        responseKind: responseKindOf(successes),
        jsonSchemaPaths: payload === undefined ? [] : unique(jsonSchemaPaths(payload.ast))
      })
    }
  })
  return routes
}
