import { HttpApiSchema } from "@effect/platform"
import { Effect, Either, JSONSchema, ParseResult, Schema } from "effect"
import { checkDefinitionId } from "../core/definitionId.js"
import type { Issue } from "../core/errors.js"
import { fromUserResult, type ResultContext } from "../core/userCode.js"
import * as JsonSchemaValidator from "../json-schema/JsonSchemaValidator.js"
import type { JsonSchema, JsonSchemaInput } from "../json-schema/JsonSchemaValidator.js"

/** What a tool sees of its caller. */
export interface ToolContext {
  /** The caller's `context` object (empty when none was sent). */
  readonly context: Readonly<Record<string, unknown>>
  /** The authenticated user, or null. */
  readonly user: unknown
  /** Aborted when the caller goes away or the call is interrupted. */
  readonly signal: AbortSignal
  /** The model's id of this call of the tool (absent when the tool is run directly). */
  readonly toolCallId?: string | undefined
}

/** What a tool's `needsApproval` sees of its caller. */
export type ToolApprovalContext = Omit<ToolContext, "signal">

/**
 * Whether a call must wait for a human's approval: `true` for every call, or a function of the input
 * (a boolean, a Promise or an Effect; its requirements join the tool's `R`). A failing function counts
 * as `true`.
 */
export type NeedsApproval<A, Ret> = boolean | ((input: A, context: ToolApprovalContext) => Ret)

/** A tool's code: a value, a Promise or an Effect; an Effect's requirements become the tool's `R`. */
export type ToolExecute<A, Ret> = (input: A, context: ToolContext) => Ret

/**
 * An error class a tool may declare: a `Schema.TaggedError` annotated with its HTTP status,
 * `class TicketNotFound extends Schema.TaggedError<TicketNotFound>()("TicketNotFound", { ticketId: Schema.String },
 * HttpApiSchema.annotations({ status: 404 })) {}`.
 */
export type ToolErrorClass = Schema.Schema.Any & { readonly _tag: string }

/** A declared error as the runner matches it: its tag, its status, and whether a failure is one. */
export interface DeclaredError {
  readonly tag: string
  readonly status: number
  readonly is: (error: unknown) => boolean
}

/** 401, 403 and 407 would read as the caller's authentication failing, not the tool. */
const RESERVED_STATUSES: ReadonlySet<number> = new Set([401, 403, 407])

const declaredErrors = (tool: string, errors: ReadonlyArray<ToolErrorClass>): ReadonlyArray<DeclaredError> =>
  errors.map((error) => {
    const tag: unknown = error?._tag
    if (!Schema.isSchema(error) || typeof tag !== "string") {
      throw new Error(`Tool "${tool}" errors: each must be a Schema.TaggedError class`)
    }
    const status = HttpApiSchema.getStatusError(error)
    if (!Number.isInteger(status) || status < 400 || status > 499 || RESERVED_STATUSES.has(status)) {
      throw new Error(
        `Tool "${tool}" error ${tag}: its status is ${status}; annotate the class with HttpApiSchema.annotations({ status }), ` +
          "a status in 400-499 other than 401, 403 and 407"
      )
    }
    return { tag, status, is: Schema.is(error) }
  })

/**
 * A tool; `R` is what its `execute` requires (the services of your own it uses, provided by the layer
 * you give `ServiceLive`/`ServicesLive`), `never` when nothing.
 */
export interface Tool<out R = never> {
  readonly name: string
  readonly description: string
  readonly tags: ReadonlyArray<string>
  /** The input as JSON Schema, for clients, models and the OpenAPI document. */
  readonly parameters: JsonSchema
  readonly decode: (input: unknown) => Either.Either<unknown, ReadonlyArray<Issue>>
  /** The errors it declares: a failure that is one is answered with its status, not 500. */
  readonly declaredErrors: ReadonlyArray<DeclaredError>
  /** Runs the tool on decoded input; any failure, thrown or returned, is the error channel. */
  readonly run: (input: unknown, context: ToolContext) => Effect.Effect<unknown, unknown, R>
  /** Whether a call with this input waits for a human's approval (absent: never; a failing check is `true`). */
  readonly needsApproval?:
    | ((input: unknown, context: ToolApprovalContext) => Effect.Effect<boolean, never, R>)
    | undefined
}

interface ToolOptions<P> {
  readonly name: string
  readonly description: string
  readonly tags?: ReadonlyArray<string>
  readonly parameters: P
  /**
   * Errors the tool fails with on purpose, each a `Schema.TaggedError` class annotated with its HTTP
   * status (400-499 other than 401, 403, 407): POST /tools/:name/execute answers that status, a model
   * gets `{ error: { _tag, message } }` as the tool's result, MCP an `isError` result.
   */
  readonly errors?: ReadonlyArray<ToolErrorClass>
}

type ApprovalOption = NeedsApproval<any, boolean | PromiseLike<boolean> | Effect.Effect<boolean, unknown, unknown>>

const approvalCheck = (needsApproval: ApprovalOption | undefined): Pick<Tool, "needsApproval"> => {
  if (needsApproval === undefined || needsApproval === false) return {}
  if (needsApproval === true) return { needsApproval: () => Effect.succeed(true) }
  return {
    needsApproval: (input, context) =>
      Effect.suspend(() => fromUserResult(needsApproval(input, context))).pipe(
        Effect.map((needed) => needed !== false),
        Effect.catchAllCause(() => Effect.succeed(true))
      )
  }
}

const make = (
  options: ToolOptions<unknown> & { readonly needsApproval?: ApprovalOption | undefined },
  parameters: JsonSchema,
  decode: Tool["decode"],
  execute: ToolExecute<any, unknown>
): Tool => {
  checkDefinitionId("Tool name", options.name)
  return {
    ...approvalCheck(options.needsApproval),
    name: options.name,
    description: options.description,
    tags: options.tags ?? [],
    parameters,
    decode,
    declaredErrors: declaredErrors(options.name, options.errors ?? []),
    run: (input, context) => Effect.suspend(() => fromUserResult(execute(input, context)))
  }
}

const fromEffectSchema = <A, I>(schema: Schema.Schema<A, I>): Pick<Tool, "parameters" | "decode"> => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all" })
  return {
    parameters: JSONSchema.make(schema) as unknown as JsonSchema,
    decode: (input) => Either.mapLeft(decode(input), ParseResult.ArrayFormatter.formatErrorSync)
  }
}

/** What a `needsApproval` function may return. */
export type ApprovalResult = boolean | PromiseLike<boolean> | Effect.Effect<boolean, any, any>

/**
 * A tool whose parameters are an Effect Schema (decoded input is typed) or a JSON Schema object
 * (validated with Ajv, input is `unknown`; `JSONSchema.make(schema)`'s value is one too).
 */
export function defineTool<A, I, Ret, Approval extends ApprovalResult = never>(
  options: ToolOptions<Schema.Schema<A, I>> & {
    readonly execute: ToolExecute<A, Ret>
    readonly needsApproval?: NeedsApproval<A, Approval>
  }
): Tool<ResultContext<Ret> | ResultContext<Approval>>
export function defineTool<Ret, Approval extends ApprovalResult = never>(
  options: ToolOptions<JsonSchemaInput> & {
    readonly execute: ToolExecute<unknown, Ret>
    readonly needsApproval?: NeedsApproval<unknown, Approval>
  }
): Tool<ResultContext<Ret> | ResultContext<Approval>>
export function defineTool(
  options: ToolOptions<Schema.Schema<any, any> | JsonSchemaInput> & {
    readonly execute: ToolExecute<any, unknown>
    readonly needsApproval?: ApprovalOption
  }
): Tool<unknown> {
  if (Schema.isSchema(options.parameters)) {
    const { decode, parameters } = fromEffectSchema(options.parameters)
    return make(options, parameters, decode, options.execute)
  }
  const schema = Either.getOrThrowWith(
    JsonSchemaValidator.checkSchema(options.parameters),
    (issues) => new Error(`Tool "${options.name}" parameters: ${issues.map((i) => i.message).join("; ")}`)
  )
  return make(options, schema, (input) => JsonSchemaValidator.validate(schema, input), options.execute)
}
