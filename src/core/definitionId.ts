import { Data } from "effect"

/** The ids of agents, workflows and their steps, and the names of tools. */
const DEFINITION_ID = /^[a-zA-Z0-9_-]{1,64}$/

/** Throws, at definition time, when `value` is not such an id; `what` names it ("Agent id", "Tool name"). */
export const checkDefinitionId = (what: string, value: string): void => {
  if (!DEFINITION_ID.test(value)) throw new Error(`${what} "${value}" must match ${DEFINITION_ID}`)
}

/** Two different definitions under one id: the app cannot start (the command line exits 2 with this message). */
export class DuplicateDefinition extends Data.TaggedError("DuplicateDefinition")<{
  readonly kind: "agent" | "tool" | "workflow"
  readonly id: string
}> {
  override get message() {
    return `Two different ${this.kind}s have the ${this.kind === "tool" ? "name" : "id"} "${this.id}"`
  }
}
