import { StepFailed } from "../steps/runner.js"
import { formatBytes } from "./StoredValues.js"

/**
 * The bound on what one execution stores (issue #42, settled 7): `workflows.maxExecutionBytes`, counted
 * in its row's `stored_bytes` by every write (its events and inner step outputs as stored, and each
 * value row once, see ValueRows' `counted`), so the count survives a restart and costs no read.
 */

export const MAX_EXECUTION_BYTES_SETTING = "workflows.maxExecutionBytes"

/** Why the step `stepId` fails after a commit left its execution storing `storedBytes`. */
export const overBound = (stepId: string, storedBytes: number, maxBytes: number) => {
  // Exact when the rounded sizes read the same (one write past the bound is often under 0.1 MiB).
  const [stored, max] = formatBytes(storedBytes) === formatBytes(maxBytes)
    ? [`${storedBytes} bytes`, `${maxBytes} bytes`]
    : [formatBytes(storedBytes), formatBytes(maxBytes)]
  return new StepFailed({
    stepId,
    message: `the execution stores ${stored}, over the ${max} of ${MAX_EXECUTION_BYTES_SETTING}`
  })
}
