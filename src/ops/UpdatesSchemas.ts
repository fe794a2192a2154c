import { Schema } from "effect"

/** What the Updates service reports, as the API shows it. */

export const DependencyUpdate = Schema.Struct({
  name: Schema.String,
  installed: Schema.String,
  latest: Schema.String.annotations({ description: "the registry's dist-tags.latest" }),
  type: Schema.Literal("major", "minor", "patch")
}).annotations({ identifier: "DependencyUpdate" })
export interface DependencyUpdate extends Schema.Schema.Type<typeof DependencyUpdate> {}

export const UpdateReport = Schema.Struct({
  hasUpdates: Schema.Boolean,
  updates: Schema.Array(DependencyUpdate).annotations({ description: "only the outdated direct dependencies" }),
  count: Schema.Number,
  message: Schema.String
}).annotations({ identifier: "UpdateReport" })
export interface UpdateReport extends Schema.Schema.Type<typeof UpdateReport> {}

export const InstallReport = Schema.Struct({
  packageName: Schema.String.annotations({ description: "the package asked for, or \"all\"" }),
  installed: Schema.Array(Schema.Struct({ name: Schema.String, version: Schema.NullOr(Schema.String) })),
  message: Schema.String,
  output: Schema.String.annotations({ description: "the last 64 KiB of npm's output" })
}).annotations({ identifier: "InstallReport" })
export interface InstallReport extends Schema.Schema.Type<typeof InstallReport> {}
