import { Context, Effect } from "effect"
import { DuplicateDefinition } from "../../core/definitionId.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"

/** The workflows the app serves (the composition root provides them). */
export class RegisteredWorkflows
  extends Context.Tag("RegisteredWorkflows")<RegisteredWorkflows, ReadonlyArray<WorkflowDefinition>>()
{}

/** The workflows by id; two with one id fail. */
export const byIdOf = (workflows: ReadonlyArray<WorkflowDefinition>) =>
  Effect.reduce(workflows, new Map<string, WorkflowDefinition>(), (byId, definition) =>
    byId.has(definition.id)
      ? Effect.fail(new DuplicateDefinition({ kind: "workflow", id: definition.id }))
      : Effect.succeed(byId.set(definition.id, definition)))
