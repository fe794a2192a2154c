import { ParseResult, Schema, SchemaAST } from "effect"
import { ApprovalsRequest, GenerateRequest } from "../AgentsSchemas.js"

const isObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

/** Whether a body answers approvals: no `input`, `options.approvals` present. */
const answersApprovals = (input: unknown): boolean =>
  isObject(input) && !("input" in input) && isObject(input.options) && "approvals" in input.options

type Direction = (schema: Schema.Schema<any, any>) => (input: unknown, options?: SchemaAST.ParseOptions) => any
const byKeys = (generate: Schema.Schema<any, any>, approvals: Schema.Schema<any, any>, direction: Direction) =>
  (input: unknown, options: SchemaAST.ParseOptions) => answersApprovals(input) ? direction(approvals)(input, options) : direction(generate)(input, options)

const firstClick = { input: "Hello! What can you do?" }

/**
 * POST /agents/:id/text and /stream: a call (`input`), or the answers to a call's pending approvals
 * (`options.approvals`, no `input`; issue #32). Told apart by their keys before decoding, so a bad body
 * is answered about the shape it has; documented as the union of the two (a call first, pre-filled).
 */
export const CallPayload = Schema.declare<
  typeof GenerateRequest.Type | typeof ApprovalsRequest.Type,
  typeof GenerateRequest.Encoded | typeof ApprovalsRequest.Encoded,
  readonly [typeof GenerateRequest, typeof ApprovalsRequest]
>(
  [GenerateRequest, ApprovalsRequest],
  {
    decode: (generate, approvals) => byKeys(generate, approvals, ParseResult.decodeUnknown),
    encode: (generate, approvals) => byKeys(generate, approvals, ParseResult.encodeUnknown)
  },
  { arbitrary: (generate, approvals) => (fc) => fc.oneof(generate(fc), approvals(fc)) }
).annotations({
  [SchemaAST.SurrogateAnnotationId]: Schema.Union(GenerateRequest.annotations({ examples: [firstClick] }), ApprovalsRequest).ast
})
