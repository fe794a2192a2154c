import { Effect } from "effect"
import { Forbidden } from "../core/errors.js"

import type { AdminRule } from "../config/AuthSettings.js"

export type { AdminRule }

export const DEFAULT_ADMIN_RULE: AdminRule = { claim: "role", value: "admin" }

/**
 * Whose records a caller may see and change: everyone's (no authentication configured, or an
 * administrator), or only those stored under `userId` (null: an anonymous caller on a public route,
 * who sees only records made anonymously).
 */
export type Visibility =
  | { readonly all: true }
  | { readonly all: false; readonly userId: string | null }

export const EVERYONE: Visibility = { all: true }

/** Who is calling, as ownership sees it. */
export interface Caller {
  /** The authenticated user (the mapped claims), or null; what tools, agents and steps receive. */
  readonly user: unknown
  /** Whether records are owned: authentication is configured (even when this caller is anonymous). */
  readonly owned: boolean
  /** The id records are stored under: the token's `sub`, or the mapped user's `id`; null when anonymous. */
  readonly userId: string | null
  readonly visibility: Visibility
}

export const SHARED_CALLER: Caller = { user: null, owned: false, userId: null, visibility: EVERYONE }

const idText = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null

/** `mapUser(claims).id` when the mapped user is an object with an id, else the token's `sub`. */
export const userIdOf = (claims: Record<string, unknown>, user: unknown): string | null => {
  const mapped = typeof user === "object" && user !== null ? idText((user as { readonly id?: unknown }).id) : null
  return mapped ?? idText(claims.sub)
}

/** Whether the claims (or the mapped user) carry the admin rule's value; an array claim counts if it holds it. */
export const isAdmin = (rule: AdminRule, claims: Record<string, unknown>, user: unknown): boolean => {
  const holds = (value: unknown) => Array.isArray(value) ? value.includes(rule.value) : value === rule.value
  const fromUser = typeof user === "object" && user !== null ? (user as Record<string, unknown>)[rule.claim] : undefined
  return holds(claims[rule.claim]) || holds(fromUser)
}

/** The caller behind a verified token. */
export const authenticatedCaller = (rule: AdminRule, claims: Record<string, unknown>, user: unknown): Caller => {
  const userId = userIdOf(claims, user)
  return {
    user,
    owned: true,
    userId,
    visibility: isAdmin(rule, claims, user) ? EVERYONE : { all: false, userId }
  }
}

/** A caller without a token while authentication is configured (a public route). */
export const anonymousCaller: Caller = {
  user: null,
  owned: true,
  userId: null,
  visibility: { all: false, userId: null }
}

/** Whether a record stored under `recordUserId` is the caller's to see and change. */
export const canSee = (visibility: Visibility, recordUserId: string | null | undefined): boolean =>
  visibility.all || (recordUserId ?? null) === visibility.userId

/**
 * The prefix of the service's own owners (`system:schedule/<id>`: code schedules' executions), whose
 * completion callbacks are signed with the operator's system secret: no request may act as one.
 */
export const SYSTEM_USER_PREFIX = "system:"

/**
 * The user id a request acts as. Under authentication a body's `userId` may only name the caller
 * (absent means the caller); without it, the body's `userId` is taken as given (nothing is owned).
 * Neither may be one of the service's own (`system:`).
 */
export const actingUserId = (
  caller: Caller,
  bodyUserId: string | undefined
): Effect.Effect<string | undefined, Forbidden> => {
  const acting = caller.owned ? caller.userId ?? bodyUserId : bodyUserId
  if (acting?.startsWith(SYSTEM_USER_PREFIX) === true) {
    return Effect.fail(
      new Forbidden({
        message:
          `A request cannot act as a user whose id starts with "${SYSTEM_USER_PREFIX}": the service keeps those for itself`
      })
    )
  }
  if (!caller.owned) return Effect.succeed(bodyUserId)
  if (bodyUserId !== undefined && bodyUserId !== caller.userId) {
    return Effect.fail(
      new Forbidden({
        message: "options.userId must be the authenticated caller's id (or be left out): it cannot name another user"
      })
    )
  }
  return Effect.succeed(caller.userId ?? undefined)
}
