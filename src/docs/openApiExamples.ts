import { SERVER_ID as MCP_SERVER_ID } from "../mcp/McpExposure.js"
import type { AppCatalog } from "./appCatalog.js"

/**
 * Examples that make the explorer's first click succeed, taken from the app being served rather than
 * written into the contracts (an embedder's app has other ids): path parameters naming an agent, a tool
 * or a workflow offer the registered ones (MCP's `{id}` its one server), and the bodies that depend on
 * which one (a tool's input, a workflow's input or resume data) offer one example per entry, under the
 * same names and in the same order, so the pre-selected pair belongs together. Parameters naming records made at run time
 * (executions, conversations, history entries) get none: no value exists before a call, and a delete should not be
 * pre-filled. Bodies that do not depend on the entry carry their schema's own `examples`, which Swagger
 * UI pre-fills when the media type has none.
 */
type Named = ReadonlyArray<{ readonly key: string; readonly value: unknown }>

const exampleMap = (entries: Named, label: (key: string) => string) =>
  Object.fromEntries(entries.map(({ key, value }) => [key, { summary: label(key), value }]))

// Console writes: an example the handler refuses, so executing the pre-filled request changes nothing.
const inert: Record<string, { readonly value: unknown; readonly summary: string }> = {
  "ops.installUpdates": {
    value: { packageName: "" },
    summary: "Refused as pre-filled: name one of GET /updates's packages (an empty body installs every update)"
  },
  "ops.setupObservability": {
    value: { publicKey: "", secretKey: "" },
    summary: "Refused as pre-filled: fill in both keys (they are written to .env)"
  }
}

interface Examples {
  readonly parameter: Record<string, Named>
  readonly body: Record<string, Named>
}

const examplesFor = (catalog: AppCatalog): Examples => {
  const agents = catalog.agents.map(({ id }) => ({ key: id, value: id }))
  const tools = catalog.tools.map(({ name }) => ({ key: name, value: name }))
  const startable = catalog.workflows.filter((workflow) => "input" in workflow)
  const resumable = catalog.workflows.filter((workflow) => "resumeData" in workflow)
  const workflows = (list: ReadonlyArray<{ readonly id: string }>) => list.map(({ id }) => ({ key: id, value: id }))
  const start = startable.map(({ id, input }) => ({ key: id, value: { input } }))
  return {
    parameter: {
      "agents.*.id": agents,
      "tools.*.name": tools,
      "mcp.*.id": [{ key: MCP_SERVER_ID, value: MCP_SERVER_ID }],
      "workflows.*.id": workflows(catalog.workflows),
      "workflows.executeWorkflow.id": workflows(startable),
      "workflows.runWorkflow.id": workflows(startable),
      "workflows.streamWorkflow.id": workflows(startable),
      "workflows.resumeExecution.id": workflows(resumable)
    },
    body: {
      "tools.executeTool": catalog.tools.map(({ input, name }) => ({ key: name, value: { input } })),
      "workflows.executeWorkflow": start,
      "workflows.runWorkflow": start,
      "workflows.streamWorkflow": start,
      "workflows.resumeExecution": resumable.map(({ id, resumeData }) => ({ key: id, value: { resumeData } }))
    }
  }
}

const parameterExamples = (examples: Examples, operationId: string, name: string): Named | undefined => {
  const group = operationId.split(".")[0]
  return examples.parameter[`${operationId}.${name}`] ?? examples.parameter[`${group}.*.${name}`]
}

const withOperationExamples = (examples: Examples, operation: Record<string, any>): Record<string, any> => {
  const operationId: string = operation.operationId ?? ""
  const parameters = (operation.parameters as Array<Record<string, any>> | undefined)?.map((parameter) => {
    if (parameter.in !== "path") return parameter
    const named = parameterExamples(examples, operationId, parameter.name)
    return named === undefined || named.length === 0
      ? parameter
      : { ...parameter, examples: exampleMap(named, (key) => key) }
  })
  const media = operation.requestBody?.content?.["application/json"]
  let body: Record<string, any> | undefined
  const named = examples.body[operationId]
  if (media !== undefined && inert[operationId] !== undefined) {
    body = { ...media, examples: { inert: inert[operationId] } }
  } else if (media !== undefined && named !== undefined && named.length > 0) {
    body = { ...media, examples: exampleMap(named, (key) => `For ${key}`) }
  }
  return {
    ...operation,
    ...(parameters === undefined ? {} : { parameters }),
    ...(body === undefined
      ? {}
      : {
        requestBody: {
          ...operation.requestBody,
          content: { ...operation.requestBody.content, "application/json": body }
        }
      })
  }
}

export const withAppExamples = (catalog: () => AppCatalog) => (spec: Record<string, any>): Record<string, any> => {
  const examples = examplesFor(catalog())
  const paths: Record<string, any> = {}
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    paths[path] = Object.fromEntries(
      Object.entries(item).map(([method, operation]) => [method, withOperationExamples(examples, operation)])
    )
  }
  return { ...spec, paths }
}
