import type { Schema } from "effect"

/**
 * An agent's working memory: a small structured record the model reads in its instructions and
 * replaces through the built-in `update_working_memory` tool, whose input is `schema` (its JSON
 * Schema is the tool's input schema). `user`: one record per identified user (under authentication
 * the token's subject; without it the call's `userId`); `conversation`: one per conversation id.
 */
export interface WorkingMemoryConfig {
  readonly scope: "user" | "conversation"
  readonly schema: Schema.Schema.AnyNoContext
}

/** The most JSON a record may hold, in UTF-8 bytes. */
export const WORKING_MEMORY_MAX_BYTES = 16 * 1024

export const UPDATE_WORKING_MEMORY = "update_working_memory"
