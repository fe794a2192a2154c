import { LOOP_BOUNDS, type LoopStep } from "./Loops.js"

/** Definition-time checks of the loop and branch steps (their static bounds). */

const isCount = (value: unknown, max: number) =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= max

/** The step, checked: its bounds that are known when it is defined; throws with a message otherwise. */
export const checkLoopStep = <T extends LoopStep>(step: T): T => {
  const at = `${step.type} ${step.id}`
  switch (step.type) {
    case "andDoWhile":
    case "andDoUntil":
      if (step.maxIterations !== undefined && !isCount(step.maxIterations, LOOP_BOUNDS.maxIterations)) {
        throw new Error(
          `${at}: maxIterations must be an integer from 1 to ${LOOP_BOUNDS.maxIterations}, not ${step.maxIterations}`
        )
      }
      if (typeof step.condition !== "function") throw new Error(`${at}: condition must be a function`)
      return step
    case "andBranch":
      if (!Array.isArray(step.branches) || step.branches.length === 0 || step.branches.length > LOOP_BOUNDS.branches) {
        throw new Error(`${at}: branches must be an array of 1 to ${LOOP_BOUNDS.branches} branches`)
      }
      return step
    case "andMap": {
      // Checked as given (a definition from JavaScript may hold anything here).
      const map: unknown = step.map
      const keys = typeof map === "object" && map !== null ? Object.keys(map) : []
      if (keys.length === 0 || keys.length > LOOP_BOUNDS.mapKeys) {
        throw new Error(`${at}: map must have 1 to ${LOOP_BOUNDS.mapKeys} keys`)
      }
      const bad = keys.find((key) => typeof step.map[key] !== "function")
      if (bad !== undefined) throw new Error(`${at}: map.${bad} must be a function of the step's context`)
      return step
    }
    case "andForEach":
      if (typeof step.items !== "function") throw new Error(`${at}: items must be a function of the step's context`)
      return step
  }
}

/** The ids of a loop or branch step and its inner steps; undefined for other steps. */
export const loopIds = (step: { readonly type: string; readonly id: string }): ReadonlyArray<string> | undefined => {
  const loop = step as LoopStep
  switch (loop.type) {
    case "andForEach":
    case "andDoWhile":
    case "andDoUntil":
      return [loop.id, loop.step.id]
    case "andBranch":
      return [loop.id, ...loop.branches.map((branch) => branch.step.id)]
    case "andMap":
      return [loop.id]
    default:
      return undefined
  }
}

/** The builder's loop and branch methods (the runtime side of LoopsChain). */
export const loopMethods = (add: (step: LoopStep) => unknown) => ({
  andForEach: (step: Omit<Extract<LoopStep, { type: "andForEach" }>, "type">) =>
    add(checkLoopStep({ ...step, type: "andForEach" })),
  andDoWhile: (step: Omit<Extract<LoopStep, { type: "andDoWhile" | "andDoUntil" }>, "type">) =>
    add(checkLoopStep({ ...step, type: "andDoWhile" })),
  andDoUntil: (step: Omit<Extract<LoopStep, { type: "andDoWhile" | "andDoUntil" }>, "type">) =>
    add(checkLoopStep({ ...step, type: "andDoUntil" })),
  andBranch: (step: Omit<Extract<LoopStep, { type: "andBranch" }>, "type">) =>
    add(checkLoopStep({ ...step, type: "andBranch" })),
  andMap: (step: Omit<Extract<LoopStep, { type: "andMap" }>, "type">) => add(checkLoopStep({ ...step, type: "andMap" }))
})
