import { Effect, Layer } from "effect"
import { approvalMigrations } from "./agents/approvals/migration.js"
import { addConversationOwnerIndexes, memoryMigrations } from "./agents/memory/migration.js"
import { observabilityMigrations } from "./observability/migration.js"
import { retentionMigrations } from "./retention/migration.js"
import { type Migration, Migrations } from "./storage/Migrations.js"
import { type DatabaseUrl, SqlLive } from "./storage/Sql.js"
import { webhookMigrations } from "./webhooks/migration.js"
import { concurrencyMigrations } from "./workflows/concurrency/migration.js"
import { addExecutionUsers, workflowMigrations } from "./workflows/execution/migration.js"
import { scheduleMigrations } from "./workflows/schedules/migration.js"

/** The service's schema: every feature's migrations, in the order of their ids. */
export const serviceMigrations: Readonly<Record<string, Migration>> = {
  ...memoryMigrations,
  ...workflowMigrations,
  ...observabilityMigrations,
  ...retentionMigrations,
  ...approvalMigrations,
  ...scheduleMigrations,
  ...concurrencyMigrations,
  ...webhookMigrations,
  // Released as one migration over two features' tables, so it stays one.
  "0013_record_owners": Effect.zipRight(addExecutionUsers, addConversationOwnerIndexes)
}

export const ServiceMigrationsLive = Layer.succeed(Migrations, serviceMigrations)

/** The service's database at `url`, migrated; `Migrations` stays in context for the readiness check. */
export const DatabaseLive = (url?: DatabaseUrl) => SqlLive(url).pipe(Layer.provideMerge(ServiceMigrationsLive))
