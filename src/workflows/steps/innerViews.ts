import type { StepSpec } from "../definition/StepContext.js"
import type { Step } from "../definition/WorkflowDefinition.js"

/** A step's inner steps as GET /workflows/:id shows them (issue #31): each with its path under the step, nested ones too. */
export const innerStepsOf = (
  step: Step
): ReadonlyArray<{ readonly path: string; readonly step: Omit<StepSpec, "execute"> & { readonly type: string } }> => {
  const spec = (path: string, one: StepSpec, type: string) => ({ path, step: { ...one, type } })
  switch (step.type) {
    case "andAll":
    case "andRace":
      return step.steps.map((one) => spec(`${step.id}/${one.id}`, one, "andThen"))
    case "andWhen":
      return [spec(`${step.id}/${step.step.id}`, step.step, "andThen")]
    case "andForEach":
    case "andDoWhile":
    case "andDoUntil":
      return [spec(`${step.id}[]`, step.step, step.type === "andForEach" ? "item" : "iteration")]
    case "andBranch":
      return step.branches.map((branch) => spec(`${step.id}/${branch.step.id}`, branch.step, "branch"))
    case "andMap":
      return Object.keys(step.map).map((key) => ({ path: `${step.id}/${key}`, step: { id: key, type: "mapKey" } }))
    case "andWorkflow":
      // A child's steps, each followed by its own inner steps (a loop's item, a grandchild's steps), under full paths.
      return step.workflow.steps.flatMap((one) => [
        { path: `${step.id}/${one.id}`, step: one },
        ...innerStepsOf(one).map((nested) => ({ ...nested, path: `${step.id}/${nested.path}` }))
      ])
    case "andThen":
    case "andTap":
    case "andAgent":
    case "andSleep":
    case "andSleepUntil":
      return []
  }
}
