/** Who and what a call is: its context as an agent sees it, and the user its conversation belongs to. */

/**
 * Under authentication, the user a conversation belongs to (null: anonymous callers): its memory is
 * read by agent, owner and conversation, so one user's conversation id never reaches another's.
 */
export interface Owner {
  readonly userId: string | null
}

/** What an agent knows of the call it is answering. */
export interface AgentCallContext {
  /** The caller's `options.context` (empty when none was sent). */
  readonly context: Readonly<Record<string, unknown>>
  /** The authenticated user, or null. */
  readonly user: unknown
  /** Under authentication, the caller's id (the conversation's owner); without it, the body's `userId`. */
  readonly userId?: string | undefined
  readonly conversationId?: string | undefined
  /** Under authentication: the user the call's conversation and history belong to (null: anonymous). */
  readonly owner?: Owner | undefined
}
