import { jsonSchema, tool, type ToolSet } from "ai"
import { Effect, Either, Option, Runtime, type Tracer } from "effect"
import { type Issue, ValidationError } from "../../core/errors.js"
import * as JsonSchemaValidator from "../../json-schema/JsonSchemaValidator.js"
import type { JsonSchema } from "../../json-schema/JsonSchemaValidator.js"
import type { Tool } from "../../tools/Tool.js"
import { type CallerContext, runTool } from "../../tools/ToolRunner.js"
import type { ToolHooks } from "./hooks.js"
import type { ToolGate } from "./plugins.js"

const asValidation = <A>(result: Either.Either<A, ReadonlyArray<Issue>>, prefix: string) =>
  Either.match(result, {
    onRight: (value) => ({ success: true as const, value }),
    onLeft: (issues) => ({
      success: false as const,
      error: new Error(ValidationError.fromIssues(issues, [prefix]).message)
    })
  })

/** An SDK schema validated by Ajv, for structured output. */
export const validatedJsonSchema = (schema: JsonSchema) =>
  jsonSchema<Record<string, unknown>>(schema as any, {
    validate: (value) => asValidation(JsonSchemaValidator.validate(schema, value), "output") as any
  })

/**
 * The agent's tools as the SDK wants them: inputs decoded by the tool's own schema, execution through
 * the same runner as POST /tools/:name/execute, with the caller's context and the step's abort signal.
 * A failing tool reaches the model as a tool error, as the SDK does for a throwing tool; an error the
 * tool declared (`errors`) as its result, `{ error: { _tag, message } }`. With `hooks` (an agent's
 * onToolStart/onToolEnd), each run is wrapped by them. A tool that may need approval runs through
 * `gate` (the approvals plug-in's: only a call a human approved, or an input its check lets through).
 * With `committed` (the commit plug-in's), each result is committed before the model reads it.
 */
export const toAiTools = (
  tools: ReadonlyArray<Tool>,
  caller: CallerContext,
  runtime: Runtime.Runtime<never>,
  parent: Option.Option<Tracer.AnySpan>,
  hooks?: ToolHooks,
  gate?: ToolGate,
  committed?: (toolName: string, toolCallId: string, input: unknown, output: unknown) => Effect.Effect<void>
): ToolSet =>
  Object.fromEntries(tools.map((t) => {
    const execute = async (input: unknown, abortSignal: AbortSignal | undefined, toolCallId: string) => {
      const ran = hooks === undefined
        ? runTool(t, input, caller, toolCallId)
        : hooks.around(t.name, toolCallId, input, runTool(t, input, caller, toolCallId))
      const run = committed === undefined
        ? ran
        : Effect.tap(ran, (output) => committed(t.name, toolCallId, input, output))
      const call = Option.match(parent, { onNone: () => run, onSome: (span) => Effect.withParentSpan(run, span) })
      const result = await Runtime.runPromise(runtime)(Effect.either(call), { signal: abortSignal })
      if (Either.isRight(result)) return result.right
      // An error the tool declared is an answer the model can act on (a ticket that does not exist).
      if (result.left._tag === "DeclaredToolError") {
        return { error: { _tag: result.left.errorDetail._tag, message: result.left.message } }
      }
      throw new Error(result.left.message)
    }
    return [
      t.name,
      tool({
        description: t.description,
        inputSchema: jsonSchema<unknown>(t.parameters as any, {
          validate: (value) => asValidation(t.decode(value), "input")
        }),
        execute: (input, { abortSignal, toolCallId }) =>
          t.needsApproval === undefined || gate === undefined
            ? execute(input, abortSignal, toolCallId)
            : gate(t, input, toolCallId, () => execute(input, abortSignal, toolCallId))
      })
    ]
  }))
