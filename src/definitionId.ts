/** The ids of agents, workflows and their steps, and the names of tools. */
export const DEFINITION_ID = /^[a-zA-Z0-9_-]{1,64}$/

/** Throws, at definition time, when `value` is not such an id; `what` names it ("Agent id", "Tool name"). */
export const checkDefinitionId = (what: string, value: string): void => {
  if (!DEFINITION_ID.test(value)) throw new Error(`${what} "${value}" must match ${DEFINITION_ID}`)
}
