import { Effect, Either } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import { ToolRunner } from "../tools/ToolRunner.js"
import { WorkflowEngine } from "../workflows/engine/WorkflowEngine.js"

/** What the app serves, as the documentation shows it: names, and the examples its schemas carry. */
export interface AppCatalog {
  readonly agents: ReadonlyArray<{ readonly id: string; readonly name: string }>
  /** Tools with an input that their parameters accept: their schema's first example, else `{}` when valid. */
  readonly tools: ReadonlyArray<{ readonly name: string; readonly input: unknown }>
  /** The errors tools declare (`defineTool({ errors })`), each with its tool and HTTP status. */
  readonly toolErrors: ReadonlyArray<{ readonly tool: string; readonly tag: string; readonly status: number }>
  readonly workflows: ReadonlyArray<{
    readonly id: string
    readonly name: string
    /** The first example of the input schema (`Schema.annotations({ examples })`), when it has one. */
    readonly input?: unknown
    /** The first example of a resume schema (the workflow's, else a step's), when one has one. */
    readonly resumeData?: unknown
  }>
}

type JsonSchema = { readonly examples?: ReadonlyArray<unknown> } | null | undefined

// Effect's JSONSchema.make keeps only the examples that encode with the schema, so these are valid inputs.
const firstExample = (schema: JsonSchema): ReadonlyArray<unknown> =>
  Array.isArray(schema?.examples) && schema.examples.length > 0 ? [schema.examples[0]] : []

/**
 * Reads the catalog from the running services. Every read is synchronous (lists built at start-up and
 * JSON Schemas derived from definitions), so the OpenAPI transform, which is synchronous, can run it.
 */
export const readAppCatalog = Effect.gen(function*() {
  const agents = yield* AgentRegistry
  const tools = yield* ToolRunner
  const workflows = yield* WorkflowEngine
  return Effect.gen(function*() {
    const agentList = yield* agents.list
    const toolList = yield* tools.list
    const workflowList = yield* Effect.forEach(yield* workflows.list, (summary) => workflows.details(summary.id))
    return {
      agents: agentList.map(({ id, name }) => ({ id, name })),
      tools: toolList.flatMap(({ tool }) => {
        const candidates = [...firstExample(tool.parameters as JsonSchema), {}]
        const input = candidates.find((candidate) => Either.isRight(tool.decode(candidate)))
        return input === undefined ? [] : [{ name: tool.name, input }]
      }),
      toolErrors: toolList.flatMap(({ tool }) =>
        tool.declaredErrors.map(({ status, tag }) => ({ tool: tool.name, tag, status }))
      ),
      workflows: workflowList.map((details) => {
        const [input] = firstExample(details.inputSchema)
        const [resumeData] = [details.resumeSchema, ...details.steps.map((step) => step.resumeSchema)]
          .flatMap((schema) => firstExample(schema as JsonSchema))
        return {
          id: details.id,
          name: details.name,
          ...(input === undefined ? {} : { input }),
          ...(resumeData === undefined ? {} : { resumeData })
        }
      })
    } satisfies AppCatalog
  }).pipe(Effect.orDie)
})
