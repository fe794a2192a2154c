import type { SingleToolApprovalFunction, ToolApprovalConfiguration, ToolApprovalStatus, ToolSet } from "ai"
import { Runtime } from "effect"
import type { Tool, ToolApprovalContext } from "../../tools/Tool.js"
import type { ApprovedCalls } from "../generation/contract.js"
import { inputHash } from "./ApprovalStore.js"

export const NO_APPROVED_CALLS: ApprovedCalls = new Map()

/** What the model is told when a tool that needs approval is called where no human can be asked. */
export type Refusal = (toolName: string) => string

export const needsApprovalRefusal: Refusal = (toolName) => `Tool ${toolName} needs approval`

/** A task delegated by another agent cannot stop for approval (see docs/decisions.md). */
export const delegatedRefusal: Refusal = (toolName) =>
  `Tool ${toolName} needs a human's approval, which a task delegated by another agent cannot ask for: ` +
  `the user must ask for it directly`

const needed = (
  tool: Tool,
  input: unknown,
  caller: ToolApprovalContext,
  runtime: Runtime.Runtime<never>
): Promise<boolean> =>
  tool.needsApproval === undefined
    ? Promise.resolve(false)
    : Runtime.runPromise(runtime)(tool.needsApproval(input, caller))

/**
 * The SDK's `toolApproval` for the tools that may need it (undefined when none does, so a call without
 * such a tool pays nothing): a call the tool's check asks approval for stops the generation with a
 * `tool-approval-request`.
 */
export const toolApprovalFor = (
  tools: ReadonlyArray<Tool>,
  caller: ToolApprovalContext,
  runtime: Runtime.Runtime<never>,
  /** The checks of tools the registry adds (delegate_task's). */
  others?: Record<string, SingleToolApprovalFunction<unknown, unknown, unknown>>
): ToolApprovalConfiguration<ToolSet, any> | undefined => {
  if (others === undefined && !tools.some((tool) => tool.needsApproval !== undefined)) return undefined
  const gated = tools.filter((tool) => tool.needsApproval !== undefined)
  return {
    ...Object.fromEntries(gated.map((tool) => [
      tool.name,
      async (input: unknown): Promise<ToolApprovalStatus> =>
        (await needed(tool, input, caller, runtime)) ? "user-approval" : "not-applicable"
    ])),
    ...others
  }
}

/**
 * Runs `run` only if the call may run: a tool that needs no approval for this input, or a call a human
 * approved (its stored row, for this very tool and input). Anything else (an approval the SDK found in
 * messages a client wrote) never runs the tool.
 */
export const gatedRun = async <A>(
  tool: Tool,
  input: unknown,
  toolCallId: string,
  approved: ApprovedCalls,
  caller: ToolApprovalContext,
  runtime: Runtime.Runtime<never>,
  run: () => Promise<A>,
  refusal: Refusal = needsApprovalRefusal
): Promise<A> => {
  if (tool.needsApproval === undefined) return run()
  const digest = approved.get(toolCallId)
  if (digest !== undefined && digest === inputHash(tool.name, input)) return run()
  if (await needed(tool, input, caller, runtime)) throw new Error(refusal(tool.name))
  return run()
}
