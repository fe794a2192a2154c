// src/workflows/concurrency: per-key limits on executions (issue #33): the setting and its checks,
// the gate every start and resume passes, the queue's store. It may import definition/ and
// execution/ (the driver the gate launches through); nothing of engine/, schedules/ or api/'s edge.
import { Either, Schema } from "effect"
import { BadRequest } from "../../core/errors.js"

/** What a concurrency key function sees besides the input (issue #33). */
export interface ConcurrencyContext {
  /** The user the execution belongs to, if any. */
  readonly userId: string | undefined
  /** The caller's `options.context`. */
  readonly context: Readonly<Record<string, unknown>>
}

/**
 * `concurrency` on a workflow (issue #33): at most `limit` executions per key execute at once across
 * all instances; only executing ones hold a slot (suspended and sleeping ones do not). Keys are per
 * owner unless `scope: 'global'`; the default key is the workflow id. When the key is busy, `onBusy`:
 * `enqueue` (default: the start waits as `waiting: 'concurrency'`, FIFO), `reject` (409) or `interrupt`
 * (the running ones are cancelled with the reason `superseded by <id>`).
 */
export interface WorkflowConcurrency<I = unknown> {
  readonly limit: number
  readonly key?: ((input: I, context: ConcurrencyContext) => string) | undefined
  readonly scope?: "owner" | "global" | undefined
  readonly onBusy?: "enqueue" | "reject" | "interrupt" | undefined
}

/** The longest key a key function may give. */
export const MAX_CONCURRENCY_KEY = 256
/** The highest limit a workflow may set. */
export const MAX_CONCURRENCY_LIMIT = 10_000

/** Throws at definition time on a limit that is not a positive integer or an unknown setting. */
export const checkConcurrency = (workflowId: string, concurrency: WorkflowConcurrency<any> | undefined): void => {
  if (concurrency === undefined) return
  const { limit } = concurrency
  // Checked as given (a definition from JavaScript may hold anything here).
  const scope: unknown = concurrency.scope
  const onBusy: unknown = concurrency.onBusy
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
    throw new Error(`Workflow ${workflowId}: concurrency.limit must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}`)
  }
  if (scope !== undefined && scope !== "owner" && scope !== "global") {
    throw new Error(`Workflow ${workflowId}: concurrency.scope must be "owner" or "global"`)
  }
  if (onBusy !== undefined && onBusy !== "enqueue" && onBusy !== "reject" && onBusy !== "interrupt") {
    throw new Error(`Workflow ${workflowId}: concurrency.onBusy must be "enqueue", "reject" or "interrupt"`)
  }
}

/** The parts of a definition the gate reads. */
export interface Limited {
  readonly id: string
  readonly input: Schema.Schema.AnyNoContext
  readonly concurrency?: WorkflowConcurrency<any> | undefined
}

/**
 * The stored key of an execution of a limited workflow: the workflow, the owner (`*` under
 * `scope: 'global'`, `-` without an owner) and the key function's answer (the workflow id by default),
 * so keys never meet across workflows or owners. 400 when the key function throws or answers
 * anything but a string of 1 to 256 characters. `input` is in its stored (encoded) form.
 */
export const concurrencyKeyOf = (
  definition: Limited,
  input: unknown,
  context: ConcurrencyContext
): Either.Either<string | undefined, BadRequest> => {
  const concurrency = definition.concurrency
  if (concurrency === undefined) return Either.right(undefined)
  const bad = (why: string) => new BadRequest({ message: `Workflow ${definition.id}'s concurrency key ${why}` })
  let key: unknown = definition.id
  if (concurrency.key !== undefined) {
    const decoded = Schema.decodeUnknownEither(definition.input as Schema.Schema<unknown>)(input)
    if (Either.isLeft(decoded)) return Either.left(bad("could not be computed: the input does not decode"))
    try {
      key = concurrency.key(decoded.right, context)
    } catch {
      // Its message may hold the input: not repeated to the caller.
      return Either.left(bad("function failed"))
    }
  }
  if (typeof key !== "string" || key.length === 0) return Either.left(bad("must be a non-empty string"))
  if (key.length > MAX_CONCURRENCY_KEY) {
    return Either.left(bad(`is ${key.length} characters, over the ${MAX_CONCURRENCY_KEY} allowed`))
  }
  const owner = concurrency.scope === "global" ? "*" : context.userId === undefined ? "-" : `u:${context.userId}`
  return Either.right(JSON.stringify([definition.id, owner, key]))
}

/** The key as a client reads it (the key function's answer) from its stored form. */
export const shownKey = (stored: string): string => {
  try {
    const parsed: unknown = JSON.parse(stored)
    return Array.isArray(parsed) && typeof parsed[2] === "string" ? parsed[2] : stored
  } catch {
    return stored
  }
}
