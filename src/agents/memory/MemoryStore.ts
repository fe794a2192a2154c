/**
 * `memory/`: conversation memory and the call history (SQL). A store: it imports the agents' schemas,
 * the call context and storage, and working memory's row filter (forgetting a conversation forgets
 * its record too); nothing of generation or the features above it.
 */
import { SqlClient, type Statement } from "@effect/sql"
import type { ModelMessage } from "ai"
import { Context, Effect, Layer, Option, Predicate, Schema } from "effect"
import { column, NumberColumn } from "../../storage/ColumnSchemas.js"
import { committingStatements, storeCommitsOrInline } from "../../storage/StoreCommits.js"
import { ownTransaction } from "../../storage/transaction.js"
import type { HistoryEntry } from "../AgentsSchemas.js"
import type { Owner } from "../callContext.js"
import { recordFilter } from "../workingMemory/WorkingMemoryStore.js"
import { decodePageRows, decodeWholeEntries, pageColumns, pageEntry, wholeEntry } from "./historyRows.js"

export interface HistoryQuery {
  readonly page: number
  readonly limit: number
  readonly userId?: string | undefined
  readonly conversationId?: string | undefined
  /** Only this owner's entries (null: those without one); everyone's when absent. */
  readonly owner?: Owner | undefined
}

export interface RememberedExchange {
  readonly conversationId: string
  readonly userId: string | undefined
  readonly messages: ReadonlyArray<ModelMessage>
  /** A regenerated answer: the conversation's last message, when it is an answer, is deleted first. */
  readonly replacesLastAnswer?: boolean | undefined
  /** Whose conversation it is, under authentication (the answer replaced is theirs). */
  readonly owner?: Owner | undefined
}

/** A tool result the service produced (generation/toolOutcomes: the digest of what the tool answered). */
export interface StoredToolResult {
  readonly toolCallId: string
  readonly toolName: string
  readonly outcome: string
}

/** What one context load takes at most: `limit` messages, `maxBytes` of their stored JSON. */
export interface ContextBound {
  readonly limit: number
  readonly maxBytes: number
}

export class MemoryStore extends Context.Tag("MemoryStore")<MemoryStore, {
  /**
   * The newest messages of a conversation within the bound, oldest first: the last `limit` ones, fewer
   * when they hold more than `maxBytes` (the newest that fit; none when the newest alone is over).
   */
  readonly load: (
    agentId: string,
    conversationId: string,
    bound: ContextBound,
    owner?: Owner
  ) => Effect.Effect<Array<ModelMessage>>
  readonly append: (
    agentId: string,
    conversationId: string,
    userId: string | undefined,
    messages: ReadonlyArray<ModelMessage>
  ) => Effect.Effect<void>
  readonly record: (agentId: string, entry: HistoryEntry) => Effect.Effect<void>
  /**
   * A finished call: its history entry, when memory is on the messages to remember, and in a
   * conversation the tool results it produced, in one transaction (none is stored without the others).
   */
  readonly saveCall: (
    agentId: string,
    entry: HistoryEntry,
    remembered?: RememberedExchange,
    toolResults?: ReadonlyArray<StoredToolResult>
  ) => Effect.Effect<void>
  /** The tool results the service produced in a conversation under these call ids (the owner's only, when given). */
  readonly toolResults: (
    agentId: string,
    conversationId: string,
    toolCallIds: ReadonlyArray<string>,
    owner?: Owner
  ) => Effect.Effect<ReadonlyArray<StoredToolResult>>
  /**
   * A conversation's memory (its messages, its working memory) and history entries deleted, in one transaction (only the
   * owner's rows, when given); how many of each went (both 0: no such conversation).
   */
  readonly forget: (
    agentId: string,
    conversationId: string,
    owner?: Owner
  ) => Effect.Effect<{
    readonly messages: number
    readonly historyEntries: number
    readonly workingMemory: number
    readonly approvals: number
  }>
  /** Newest first; inputs and outputs over HISTORY_CUT_BYTES cut and flagged `truncated` (historyRows.ts). */
  readonly history: (
    agentId: string,
    query: HistoryQuery
  ) => Effect.Effect<{ readonly entries: ReadonlyArray<HistoryEntry>; readonly total: number }>
  /** One entry whole (only the owner's, when given). */
  readonly entry: (agentId: string, id: string, owner?: Owner) => Effect.Effect<Option.Option<HistoryEntry>>
}>() {}

const ROLES: ReadonlySet<unknown> = new Set(["system", "user", "assistant", "tool"])

/** A remembered message: only its role is checked here, its content is the AI SDK's to validate. */
const StoredMessage = Schema.parseJson(
  Schema.declare((input): input is ModelMessage => Predicate.hasProperty(input, "role") && ROLES.has(input.role))
)

const decodeMessages = Schema.decodeUnknown(Schema.Array(Schema.Struct({ message: StoredMessage })))
const decodeLastMessage = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ id: Schema.Union(Schema.Number, Schema.String), message: StoredMessage }))
)
const decodeToolResults = Schema.decodeUnknown(Schema.Array(Schema.Struct({
  toolCallId: column(Schema.String, "tool_call_id"),
  toolName: column(Schema.String, "tool_name"),
  outcome: Schema.String
})))
const decodeCount = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ total: NumberColumn })))

export const MemoryStoreLive = Layer.scoped(
  MemoryStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const commit = committingStatements(yield* storeCommitsOrInline)

    const ownedBy = (owner: Owner) => owner.userId === null ? sql`user_id IS NULL` : sql`user_id = ${owner.userId}`

    /** The rows of one conversation (only the owner's, when given), in either table: what reading and deleting it both select. */
    const inConversation = (agentId: string, conversationId: string, owner?: Owner) =>
      owner === undefined
        ? sql`agent_id = ${agentId} AND conversation_id = ${conversationId}`
        : sql`agent_id = ${agentId} AND conversation_id = ${conversationId} AND ${ownedBy(owner)}`

    const messageBytes = sql.onDialectOrElse({
      pg: () => sql.literal("octet_length(message)"),
      orElse: () => sql.literal("length(CAST(message AS BLOB))")
    })

    // The sizes are summed over the last `limit` rows (newest first) without reading a message into the
    // service; only the messages whose running total fits are read.
    const load = Effect.fn("MemoryStore.load", { captureStackTrace: false })(
      function*(agentId: string, conversationId: string, bound: ContextBound, owner?: Owner) {
        yield* Effect.annotateCurrentSpan({ "agent.id": agentId, conversationId })
        const rows = yield* sql`SELECT message FROM agent_messages WHERE id IN (
            SELECT id FROM (
              SELECT id, SUM(bytes) OVER (ORDER BY id DESC ROWS UNBOUNDED PRECEDING) AS running FROM (
                SELECT id, ${messageBytes} AS bytes FROM agent_messages
                WHERE ${inConversation(agentId, conversationId, owner)}
                ORDER BY id DESC LIMIT ${bound.limit}
              ) newest
            ) sized WHERE running <= ${bound.maxBytes}
          ) ORDER BY id DESC`.pipe(Effect.flatMap(decodeMessages), Effect.orDie)
        return rows.map((row) => row.message).reverse()
      }
    )

    const insertMessages = (
      agentId: string,
      conversationId: string,
      userId: string | undefined,
      messages: ReadonlyArray<ModelMessage>
    ) =>
      sql`INSERT INTO agent_messages ${
        sql.insert(messages.map((message) => ({
          agent_id: agentId,
          conversation_id: conversationId,
          user_id: userId ?? null,
          message: JSON.stringify(message),
          created_at: new Date().toISOString()
        })))
      }`

    const insertHistory = (agentId: string, entry: HistoryEntry) =>
      sql`INSERT INTO agent_history ${
        sql.insert({
          id: entry.id,
          agent_id: agentId,
          conversation_id: entry.conversationId,
          user_id: entry.userId,
          input: JSON.stringify(entry.input),
          output: entry.output,
          status: entry.status,
          start_time: entry.startTime,
          end_time: entry.endTime,
          usage: entry.usage === null
            ? null
            : JSON.stringify(entry.model === undefined ? entry.usage : { ...entry.usage, model: entry.model }),
          tool_calls: JSON.stringify(entry.toolCalls)
        })
      }`

    /**
     * The statement that deletes the conversation's last message when it is an answer (roles are read
     * from the stored JSON, here), on condition that it is still the last when the write commits.
     */
    const deleteLastAnswer = (agentId: string, remembered: RememberedExchange) =>
      Effect.gen(function*() {
        const last = yield* sql`SELECT id, message FROM agent_messages
          WHERE ${inConversation(agentId, remembered.conversationId, remembered.owner)}
          ORDER BY id DESC LIMIT 1`.pipe(Effect.flatMap(decodeLastMessage), Effect.map((rows) => rows.at(0)))
        if (last === undefined || last.message.role !== "assistant") return []
        return [sql`DELETE FROM agent_messages WHERE id = ${last.id} AND id = (SELECT MAX(id) FROM agent_messages
          WHERE ${inConversation(agentId, remembered.conversationId, remembered.owner)})`]
      })

    /** Statements committed together (the stores' group commit). */
    const committed = (...statements: [...ReadonlyArray<Statement.Statement<unknown>>, Statement.Statement<object>]) =>
      Effect.asVoid(commit(...statements))

    const span = (name: string, agentId: string) =>
      Effect.withSpan(`MemoryStore.${name}`, { captureStackTrace: false, attributes: { "agent.id": agentId } })

    const append = (
      agentId: string,
      conversationId: string,
      userId: string | undefined,
      messages: ReadonlyArray<ModelMessage>
    ) =>
      messages.length === 0
        ? Effect.void
        : committed(insertMessages(agentId, conversationId, userId, messages)).pipe(span("append", agentId))

    const record = (agentId: string, entry: HistoryEntry) =>
      committed(insertHistory(agentId, entry)).pipe(span("record", agentId))

    const insertToolResults = (agentId: string, entry: HistoryEntry, results: ReadonlyArray<StoredToolResult>) =>
      entry.conversationId === null || results.length === 0 ? [] : [
        sql`INSERT INTO agent_tool_results ${
          sql.insert(results.map((result) => ({
            call_id: entry.id,
            agent_id: agentId,
            conversation_id: entry.conversationId,
            user_id: entry.userId,
            tool_call_id: result.toolCallId,
            tool_name: result.toolName,
            outcome: result.outcome
          })))
        }`
      ]

    const saveCall = (
      agentId: string,
      entry: HistoryEntry,
      remembered?: RememberedExchange,
      toolResults: ReadonlyArray<StoredToolResult> = []
    ) =>
      Effect.gen(function*() {
        const results = insertToolResults(agentId, entry, toolResults)
        if (remembered === undefined) return yield* committed(...results, insertHistory(agentId, entry))
        const deletion = remembered.replacesLastAnswer === true
          ? yield* Effect.orDie(deleteLastAnswer(agentId, remembered))
          : []
        const messages = remembered.messages.length === 0
          ? []
          : [insertMessages(agentId, remembered.conversationId, remembered.userId, remembered.messages)]
        yield* committed(...deletion, ...messages, ...results, insertHistory(agentId, entry))
      }).pipe(span("saveCall", agentId))

    const toolResults = (agentId: string, conversationId: string, toolCallIds: ReadonlyArray<string>, owner?: Owner) =>
      toolCallIds.length === 0 ?
        Effect.succeed([]) :
        sql`SELECT tool_call_id, tool_name, outcome FROM agent_tool_results
        WHERE ${inConversation(agentId, conversationId, owner)} AND ${sql.in("tool_call_id", toolCallIds)}`.pipe(
          Effect.flatMap(decodeToolResults),
          Effect.orDie,
          span("toolResults", agentId)
        )

    const forget = (agentId: string, conversationId: string, owner?: Owner) =>
      ownTransaction(sql)(Effect.gen(function*() {
        const messages = yield* sql<{ id: number | string }>`DELETE FROM agent_messages
          WHERE ${inConversation(agentId, conversationId, owner)} RETURNING id`
        const entries = yield* sql<{ id: string }>`DELETE FROM agent_history
          WHERE ${inConversation(agentId, conversationId, owner)} RETURNING id`
        yield* sql`DELETE FROM agent_tool_results WHERE ${inConversation(agentId, conversationId, owner)}`
        const working = yield* sql<{ id: number | string }>`DELETE FROM agent_working_memory WHERE ${
          recordFilter(sql, { agentId, scope: "conversation", key: conversationId, owner })
        } RETURNING id`
        // Tool approvals (answered or not) are the conversation's too: a pending one can no longer be answered.
        const approvals = yield* sql<{ id: string }>`DELETE FROM agent_tool_approvals
          WHERE agent_id = ${agentId} AND conversation_id = ${conversationId}${
          owner === undefined
            ? sql``
            : owner.userId === null
            ? sql` AND owned = 1 AND owner IS NULL`
            : sql` AND owner = ${owner.userId}`
        } RETURNING id`
        return {
          messages: messages.length,
          historyEntries: entries.length,
          workingMemory: working.length,
          approvals: approvals.length
        }
      })).pipe(Effect.orDie, span("forget", agentId))

    const history = Effect.fn("MemoryStore.history", { captureStackTrace: false })(
      function*(agentId: string, query: HistoryQuery) {
        yield* Effect.annotateCurrentSpan("agent.id", agentId)
        const filters = [
          sql`agent_id = ${agentId}`,
          ...(query.owner === undefined ? [] : [ownedBy(query.owner)]),
          ...(query.userId === undefined ? [] : [sql`user_id = ${query.userId}`]),
          ...(query.conversationId === undefined ? [] : [sql`conversation_id = ${query.conversationId}`])
        ]
        const where = sql.and(filters)
        const [count] = yield* sql`SELECT COUNT(*) AS total FROM agent_history WHERE ${where}`.pipe(
          Effect.flatMap(decodeCount)
        )
        const entries = yield* sql`SELECT ${pageColumns(sql)} FROM agent_history WHERE ${where}
          ORDER BY start_time DESC, id DESC LIMIT ${query.limit} OFFSET ${query.page * query.limit}`.pipe(
          Effect.flatMap(decodePageRows)
        )
        return { entries: entries.map(pageEntry), total: count.total }
      },
      Effect.orDie
    )

    const entry = Effect.fn("MemoryStore.entry", { captureStackTrace: false })(
      function*(agentId: string, id: string, owner?: Owner) {
        yield* Effect.annotateCurrentSpan("agent.id", agentId)
        const rows = yield* sql`SELECT * FROM agent_history
          WHERE agent_id = ${agentId} AND id = ${id}${owner === undefined ? sql`` : sql` AND ${ownedBy(owner)}`}`.pipe(
          Effect.flatMap(decodeWholeEntries)
        )
        return Option.map(Option.fromNullable(rows[0]), wholeEntry)
      },
      Effect.orDie
    )

    return MemoryStore.of({ load, append, record, saveCall, toolResults, forget, history, entry })
  })
)
