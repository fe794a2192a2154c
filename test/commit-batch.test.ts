import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Cause, Effect, Exit, type Layer, Redacted } from "effect"
import { messageWithCause } from "../src/core/errorMessages.js"
import { makeBatchCommitter } from "../src/storage/commitBatch.js"
import { type CommitRequest, commitRequestsOn } from "../src/storage/commits.js"
import { ownTransaction } from "../src/storage/transaction.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"

/**
 * The commit thread's transactions (better-sqlite3, as the thread runs them): a batch commits together;
 * a request whose statements fail fails alone; a COMMIT that fails fails every request of its batch
 * and leaves nothing of them behind, and the next batch commits.
 */
const TABLES = `
    CREATE TABLE runs (id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL);
    CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, PRIMARY KEY (run_id, seq));
    -- Checked at COMMIT: a row naming a missing parent makes the COMMIT itself fail.
    CREATE TABLE notes (run_id TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED);
`

const open = () => {
  const db = new Database(":memory:")
  db.exec(`PRAGMA foreign_keys = ON; ${TABLES}`)
  return db
}

/** The writes, with the dialect's placeholder (`?` on SQLite, `$1` on Postgres). */
const writes = (at: (n: number) => string) => ({
  create: (id: string): CommitRequest => ({
    statements: [[`INSERT INTO runs (id, last_seq) VALUES (${at(1)}, 0)`, [id]]]
  }),
  /** Two events numbered after the run's last, the run's counter bumped in the same transaction. */
  advance: (id: string): CommitRequest => ({
    statements: [[`UPDATE runs SET last_seq = last_seq + 2 WHERE id = ${at(1)} RETURNING last_seq`, [id]]],
    append: {
      table: "events",
      numberColumn: "seq",
      numberFrom: "last_seq",
      rows: [{ run_id: id, type: "a" }, { run_id: id, type: "b" }]
    }
  }),
  /** Checked only at COMMIT, and refused there: no run is "nobody". */
  orphanNote: { statements: [[`INSERT INTO notes (run_id) VALUES (${at(1)})`, ["nobody"]]] } as CommitRequest
})
const { advance, create, orphanNote } = writes(() => "?")

const contents = (db: Database.Database) => ({
  runs: db.prepare("SELECT id, last_seq FROM runs ORDER BY id").all(),
  events: db.prepare("SELECT run_id, seq, type FROM events ORDER BY run_id, seq").all(),
  notes: db.prepare("SELECT run_id FROM notes").all()
})

describe("the commit thread's batches", () => {
  it("commits a batch in one transaction, its appended rows numbered after the counter each UPDATE returned", () => {
    const db = open()
    const commit = makeBatchCommitter(db)
    expect(commit([create("r1"), create("r2")])).toEqual([{ rows: [] }, { rows: [] }])
    expect(commit([advance("r1"), advance("r2"), advance("r1")])).toEqual([
      { rows: [{ last_seq: 2 }] },
      { rows: [{ last_seq: 2 }] },
      { rows: [{ last_seq: 4 }] }
    ])
    expect(contents(db).events).toEqual([
      { run_id: "r1", seq: 1, type: "a" },
      { run_id: "r1", seq: 2, type: "b" },
      { run_id: "r1", seq: 3, type: "a" },
      { run_id: "r1", seq: 4, type: "b" },
      { run_id: "r2", seq: 1, type: "a" },
      { run_id: "r2", seq: 2, type: "b" }
    ])
  })

  it("a request whose statement fails fails alone; the rest of its batch commits", () => {
    const db = open()
    const commit = makeBatchCommitter(db)
    commit([create("r1")])
    const outcomes = commit([advance("r1"), create("r1"), create("r2")])
    expect(outcomes[0]).toEqual({ rows: [{ last_seq: 2 }] })
    expect(outcomes[1]).toEqual({ error: expect.stringMatching(/UNIQUE constraint failed: runs\.id/) })
    expect(outcomes[2]).toEqual({ rows: [] })
    expect(contents(db).runs).toEqual([{ id: "r1", last_seq: 2 }, { id: "r2", last_seq: 0 }])
    expect(contents(db).events).toHaveLength(2)
  })

  it("a COMMIT that fails fails every request of its batch, stores none of them, and the next batch commits", () => {
    const db = open()
    const commit = makeBatchCommitter(db)
    commit([create("r1")])
    const outcomes = commit([advance("r1"), orphanNote, create("r2")])
    expect(outcomes).toEqual([0, 1, 2].map(() => ({ error: expect.stringMatching(/FOREIGN KEY constraint failed/) })))
    expect(db.inTransaction).toBe(false)
    expect(contents(db)).toEqual({ runs: [{ id: "r1", last_seq: 0 }], events: [], notes: [] })

    expect(commit([advance("r1"), create("r2")])).toEqual([{ rows: [{ last_seq: 2 }] }, { rows: [] }])
    expect(contents(db).runs).toEqual([{ id: "r1", last_seq: 2 }, { id: "r2", last_seq: 0 }])
  })
})

/** The same on the service's own client (GroupCommit's transactions): Postgres, and SQLite in memory. */
const onClient = (
  client: Layer.Layer<SqlClient.SqlClient, unknown>,
  setup: ReadonlyArray<string>,
  at: (n: number) => string
) =>
  Effect.gen(function*() {
    const { advance, create, orphanNote } = writes(at)
    const sql = yield* SqlClient.SqlClient
    for (const statement of setup) yield* sql.unsafe(statement)
    const commit = commitRequestsOn(sql)
    const outcome = (exit: Exit.Exit<unknown, unknown>) =>
      Exit.isSuccess(exit) ? { rows: exit.value } : { error: messageWithCause(Cause.squash(exit.cause)) }
    const run = (batch: ReadonlyArray<CommitRequest>) => Effect.map(commit(batch), (exits) => exits.map(outcome))
    const stored = Effect.all({
      runs: sql.unsafe("SELECT id, last_seq FROM runs ORDER BY id"),
      events: sql.unsafe("SELECT run_id, seq, type FROM events ORDER BY run_id, seq"),
      notes: sql.unsafe("SELECT run_id FROM notes")
    })
    yield* run([create("r1"), create("r0")])
    const failed = yield* run([advance("r1"), orphanNote, create("r2")])
    expect(failed).toEqual([0, 1, 2].map(() => ({ error: expect.stringMatching(/foreign key/i) })))
    expect(yield* stored).toEqual({
      runs: [{ id: "r0", last_seq: 0 }, { id: "r1", last_seq: 0 }],
      events: [],
      notes: []
    })
    // The connection is not left inside the failed transaction.
    expect(yield* run([advance("r1"), create("r2")])).toEqual([{ rows: [{ last_seq: 2 }] }, { rows: [] }])
    expect((yield* stored).events).toEqual([{ run_id: "r1", seq: 1, type: "a" }, { run_id: "r1", seq: 2, type: "b" }])

    // A batch that falls back to one transaction per request (one request fails): the request whose own
    // COMMIT fails leaves none open for the next.
    const alone = yield* run([create("r1"), orphanNote, create("r3")])
    expect(alone[0]).toEqual({ error: expect.stringMatching(/unique|duplicate/i) })
    expect(alone[1]).toEqual({ error: expect.stringMatching(/foreign key/i) })
    expect(alone[2]).toEqual({ rows: [] })
    expect((yield* stored).notes).toEqual([])

    // A store's own transaction (a deletion, a batch of span rows) whose COMMIT fails leaves none open either.
    const [text, params] = orphanNote.statements[0]
    expect(Exit.isFailure(yield* Effect.exit(ownTransaction(sql)(sql.unsafe(text, params))))).toBe(true)
    expect((yield* stored).notes).toEqual([])
  }).pipe(Effect.provide(client))

const statementsOf = (text: string) =>
  text.split(";").map((statement) => statement.replace(/--.*$/gm, "").trim()).filter((s) => s !== "")

describe("the service client's transactions: a COMMIT that fails fails every request of its batch, leaves no transaction open, and the next batch commits", () => {
  it.scoped("on SQLite in memory", () =>
    onClient(
      SqliteClient.layer({ filename: ":memory:" }),
      ["PRAGMA foreign_keys = ON", ...statementsOf(TABLES)],
      () => "?"
    ))

  it.scoped.skipIf(!postgresAvailable)(
    "on Postgres",
    () =>
      Effect.flatMap(
        freshPostgresDatabase,
        (url) =>
          onClient(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }), statementsOf(TABLES), (n) => `$${n}`)
      ),
    30_000
  )
})
