import { formatBytes } from "../core/bytes.js"
import { ValidationError } from "../core/errors.js"

/** A UTF-16 unit's longest JSON form: `\uXXXX`. */
const MAX_JSON_BYTES_PER_UNIT = 6

/**
 * The 400 for a call's input (a string or messages, as the request gave it) whose JSON is over
 * `maxBytes`, naming the setting; undefined within it. Measured once, where the call enters the
 * registry, on the decoded value: the body's length is not the input's (a number such as `1e20`
 * grows as JSON.stringify writes it). A string short enough that even escaped it cannot be over is
 * taken without writing its JSON, which is the common call's whole cost here.
 */
export const inputRefusal = (input: unknown, maxBytes: number): ValidationError | undefined => {
  if (input === undefined) return undefined
  if (typeof input === "string" && input.length * MAX_JSON_BYTES_PER_UNIT + 2 <= maxBytes) return undefined
  const bytes = Buffer.byteLength(JSON.stringify(input))
  return bytes > maxBytes
    ? new ValidationError({
      message:
        `Agent input is ${formatBytes(bytes)} as JSON, over the ${formatBytes(maxBytes)} an agent call may take ` +
        `(AGENT_INPUT_MAX_BYTES, agents.maxInputBytes)`
    })
    : undefined
}
