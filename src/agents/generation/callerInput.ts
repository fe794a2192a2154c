import type { ModelMessage } from "ai"
import { Effect, Either } from "effect"
import { excerpt, ValidationError } from "../../core/errors.js"
import type { GenerationOptions } from "../AgentsSchemas.js"
import type { Owner } from "../callContext.js"
import type { MemoryStore } from "../memory/MemoryStore.js"
import { claimedToolResults } from "./toolOutcomes.js"

/**
 * What a caller may put into the model's context and the provider's request: no system message (the
 * agent's instructions are the only one; a caller's is dropped), provider options only on the operator's allow-list
 * (`provider.key`), tool results only as the service produced them in that conversation, and no tool
 * approvals (only the service's own rows answer them).
 */

const APPROVAL_PARTS: ReadonlySet<string> = new Set(["tool-approval-request", "tool-approval-response"])

/** Whether a caller's messages carry tool approvals (only the service's own rows may answer them). */
export const callerApprovalParts = (messages: ReadonlyArray<ModelMessage>): boolean =>
  messages.some((message) =>
    typeof message.content !== "string" && message.content.some((part) => APPROVAL_PARTS.has(part.type))
  )

/** Tool results checked against memory per call at most (more is a 400). */
export const MAX_CLAIMED_TOOL_RESULTS = 1000

const SHOWN_ALLOWED = 10

const allowedList = (allow: ReadonlySet<string>): string => {
  if (allow.size === 0) return "none"
  const names = [...allow]
  return names.slice(0, SHOWN_ALLOWED).join(", ") +
    (names.length > SHOWN_ALLOWED ? `, and ${names.length - SHOWN_ALLOWED} more` : "")
}

/**
 * A caller's messages without their system messages: the agent's instructions are the only system
 * message. The spec lets model messages carry `role: "system"`, so they are accepted and dropped, not
 * refused; input that held nothing else is a 400.
 */
export const withoutCallerSystemMessages = (
  messages: ReadonlyArray<ModelMessage>,
  field: string
): Either.Either<Array<ModelMessage>, ValidationError> => {
  const kept = messages.filter((message) => message.role !== "system")
  return kept.length > 0
    ? Either.right(kept)
    : Either.left(ValidationError.fromIssues([{
      path: [field],
      message: "must hold a message other than system messages (the agent's instructions are the only system message)"
    }]))
}

/** The first provider option off the operator's allow-list, as a 400 naming it. */
export const refusedProviderOptions = (
  options: GenerationOptions,
  allow: ReadonlySet<string>
): ValidationError | undefined => {
  for (const [provider, keys] of Object.entries(options.providerOptions ?? {})) {
    for (const key of Object.keys(keys)) {
      if (!allow.has(`${provider}.${key}`)) {
        return ValidationError.fromIssues([{
          path: ["options", "providerOptions", provider, key],
          message: `is not allowed (allowed: ${allowedList(allow)}; PROVIDER_OPTIONS_ALLOW)`
        }])
      }
    }
  }
  return undefined
}

type ProviderOptions = Record<string, Record<string, unknown>>

const allowedOnly = (options: ProviderOptions, allow: ReadonlySet<string>): ProviderOptions | undefined => {
  const kept = Object.entries(options).flatMap(([provider, keys]) => {
    const entries = Object.entries(keys).filter(([key]) => allow.has(`${provider}.${key}`))
    return entries.length === 0 ? [] : [[provider, Object.fromEntries(entries)] as const]
  })
  return kept.length === 0 ? undefined : Object.fromEntries(kept)
}

/** `value` without `providerOptions`, or with only the allowed keys. */
const stripped = <A extends object>(value: A, allow: ReadonlySet<string>): A => {
  if (!("providerOptions" in value)) return value
  const { providerOptions, ...rest } = value as A & { readonly providerOptions?: ProviderOptions }
  const kept = providerOptions === undefined ? undefined : allowedOnly(providerOptions, allow)
  return (kept === undefined ? rest : { ...rest, providerOptions: kept }) as A
}

/**
 * A caller's messages with the provider options they carry (on a message or a part; UI messages'
 * `providerMetadata` become these) cut to the allow-list: providers copy them into the request, where
 * they can override a message's role. Dropped rather than refused, as a UI client sends back the
 * metadata the provider gave it.
 */
export const withoutProviderOptions = (
  messages: ReadonlyArray<ModelMessage>,
  allow: ReadonlySet<string>
): Array<ModelMessage> =>
  messages.map((message) => {
    const outer = stripped(message, allow)
    return typeof outer.content === "string"
      ? outer
      : { ...outer, content: outer.content.map((part) => stripped(part, allow)) } as ModelMessage
  })

/**
 * Every tool result in a caller's messages must be one the service produced in this conversation (by
 * call id, tool and outcome, read from memory, the owner's only); the first that is not is a 400.
 */
export const checkClaimedToolResults = (
  memory: MemoryStore["Type"],
  agentId: string,
  conversationId: string | undefined,
  owner: Owner | undefined,
  messages: ReadonlyArray<ModelMessage>,
  field: string
): Effect.Effect<void, ValidationError> =>
  Effect.gen(function*() {
    const claimed = claimedToolResults(messages)
    if (claimed.length === 0) return
    if (claimed.length > MAX_CLAIMED_TOOL_RESULTS) {
      return yield* ValidationError.fromIssues([{
        path: [field],
        message: `must carry at most ${MAX_CLAIMED_TOOL_RESULTS} tool results`
      }])
    }
    const ids = [...new Set(claimed.map((claim) => claim.toolCallId))]
    const known = conversationId === undefined ? [] : yield* memory.toolResults(agentId, conversationId, ids, owner)
    const produced = new Set(known.map((row) => `${row.toolCallId}\u0000${row.toolName}\u0000${row.outcome}`))
    const forged = claimed.find((claim) =>
      !produced.has(`${claim.toolCallId}\u0000${claim.toolName}\u0000${claim.outcome}`)
    )
    if (forged === undefined) return
    return yield* ValidationError.fromIssues([{
      path: [field],
      message: `the tool result of call ${excerpt(forged.toolCallId, 64)} (${
        excerpt(forged.toolName, 64)
      }) is not the one this service produced in this conversation`
    }])
  })
