import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { DatabaseLive } from "../src/Database.js"
import { storageKind } from "../src/storage/Sql.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * The real store with a real failure: a trigger refuses history rows whose input mentions
 * "refuse-history", so the write fails after the model has answered.
 */
const refuseHistoryTrigger = (kind: "sqlite" | "postgres") =>
  kind === "sqlite"
    ? [`CREATE TRIGGER refuse_history BEFORE INSERT ON agent_history WHEN NEW.input LIKE '%refuse-history%'
        BEGIN SELECT RAISE(ABORT, 'history write refused'); END`]
    : [
      `CREATE FUNCTION refuse_history() RETURNS trigger AS $$ BEGIN
         IF NEW.input LIKE '%refuse-history%' THEN RAISE EXCEPTION 'history write refused'; END IF;
         RETURN NEW; END $$ LANGUAGE plpgsql`,
      `CREATE TRIGGER refuse_history BEFORE INSERT ON agent_history FOR EACH ROW EXECUTE FUNCTION refuse_history()`
    ]

/** A second connection to the service's own database. */
const withDatabase = <A, E>(use: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(
    TestServer,
    ({ config }) =>
      Effect.scoped(Effect.flatMap(Layer.build(DatabaseLive(config.databaseUrl)), (context) =>
        use(Context.get(context, SqlClient.SqlClient))))
  )

const counts = (conversationId: string) =>
  withDatabase((sql) =>
    Effect.gen(function*() {
      const [messages] = yield* sql<
        { n: number | string }
      >`SELECT COUNT(*) AS n FROM agent_messages WHERE conversation_id = ${conversationId}`
      const [history] = yield* sql<
        { n: number | string }
      >`SELECT COUNT(*) AS n FROM agent_history WHERE conversation_id = ${conversationId}`
      return { messages: Number(messages.n), history: Number(history.n) }
    })
  ).pipe(Effect.orDie)

/** Waits (polling) until the service has logged `count` failed recordings. */
const recordingFailures = (count: number) =>
  Effect.flatMap(TestServer, ({ logs }) =>
    Effect.promise(async () => {
      const deadline = Date.now() + 20_000
      const seen = () => logs.filter((line) => line.includes("could not record the agent call")).length
      while (seen() < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      return seen()
    }))

const suite = (name: string, server: Layer.Layer<TestServer, unknown>) =>
  layer(server, { excludeTestServices: true })(name, (it) => {
    it.effect(
      "a failed history write leaves no remembered messages, for /text, /stream and /chat",
      () =>
        Effect.gen(function*() {
          const { url, config } = yield* TestServer
          const ask = (path: string, input: string) =>
            fetchJson(
              `${url}/agents/assistant/${path}`,
              json({ input, options: { conversationId: "atomic", userId: "ada" } })
            )
          expect((yield* ask("text", "first words")).status).toBe(200)
          expect(yield* counts("atomic")).toEqual({ messages: 2, history: 1 })

          yield* withDatabase((sql) =>
            Effect.forEach(refuseHistoryTrigger(storageKind(config.databaseUrl)), (statement) => sql.unsafe(statement))
          ).pipe(Effect.orDie)

          const failed = yield* ask("text", "refuse-history now")
          expect(failed).toMatchObject({ status: 500, body: { success: false } })
          expect(yield* counts("atomic")).toEqual({ messages: 2, history: 1 })

          // Streams record from the SDK's finish callback, after the client has had its answer.
          const streamed = yield* ask("stream", "refuse-history in a stream")
          expect(streamed.status).toBe(200)
          expect(yield* recordingFailures(1)).toBe(1)
          const chatted = yield* ask("chat", "refuse-history in a chat")
          expect(chatted.status).toBe(200)
          expect(yield* recordingFailures(2)).toBe(2)
          expect(yield* counts("atomic")).toEqual({ messages: 2, history: 1 })

          expect((yield* ask("text", "last words")).status).toBe(200)
          expect(yield* counts("atomic")).toEqual({ messages: 4, history: 2 })
        }),
      60_000
    )
  })

suite("memory and history together on SQLite", TestServerLive())

describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite(
    "memory and history together on Postgres",
    PostgresTestServerLive()
  )
})
