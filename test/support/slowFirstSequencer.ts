import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * The files that took longest in a whole run (issue #43's profile, Node 24 on 2 cores, docs/benchmarks.md),
 * longest first; test/workflow-type-errors.test.ts's time is its collect (one TypeScript program). On a
 * fresh clone vitest has no durations of its own and runs files in the order it found them, so one of
 * these could start last and run alone while the other worker idles; started first, the short files fill
 * in around them. Only an order: a file missing here runs after these, as vitest would order it.
 */
export const SLOWEST = [
  "test/shutdown.test.ts",
  "test/concurrency-bounds.test.ts",
  "test/chaos.test.ts",
  "test/workflow-timers-postgres.test.ts",
  "test/cluster-startup.test.ts",
  "test/concurrency-instances.test.ts",
  "test/reattach-pages.test.ts",
  "test/workflow-retry-process.test.ts",
  "test/store-failures.test.ts",
  "test/fuzz.test.ts",
  "test/webhooks-fairness.test.ts",
  "test/connection-reset.test.ts",
  "test/scale-out.test.ts",
  "test/workflow-timers-instances.test.ts",
  "test/execution-ownership.test.ts",
  "test/upgrade-fixtures.test.ts",
  "test/reattach-cost.test.ts",
  "test/workflow-races.test.ts",
  "test/cli.test.ts",
  "test/workflow-timers.test.ts",
  "test/execution-bytes.test.ts",
  "test/approval-races.test.ts",
  "test/workflow-timers-process.test.ts",
  "test/workflow-type-errors.test.ts",
  "test/workflow-step-outputs-fencing.test.ts",
  "test/webhook-outbox.test.ts",
  "test/workflow-races-postgres.test.ts",
  "test/workflow-replay.test.ts",
  "test/agent-bounds.test.ts",
  "test/execution-listing.test.ts",
  "test/working-memory-store.test.ts"
]

/**
 * The files that measure the heap and buffers their process holds. The "unit" project is not isolated (a
 * worker runs file after file); these start it, in the fresh workers vitest starts for each project, so
 * that no other file ran in their process before them.
 */
export const MEASURE_HEAP = ["test/reattach-pages.test.ts", "test/reattach-cost.test.ts", "test/stored-values.test.ts"]

const isAmong = (files: ReadonlyArray<string>, spec: TestSpecification) =>
  files.some((file) => spec.moduleId.endsWith(`/${file}`))

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    // After a run here vitest has every file's duration (node_modules/.vite) and orders longest first itself.
    const measured = files.every((spec) =>
      this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)
        !== undefined
    )
    const rank = (spec: TestSpecification) => {
      if (isAmong(MEASURE_HEAP, spec)) return -1
      if (measured) return 0
      const index = SLOWEST.findIndex((file) => spec.moduleId.endsWith(`/${file}`))
      return index === -1 ? SLOWEST.length : index
    }
    // The projects run one after the other (each queued whole before the next), in the order their first
    // file comes: "process" first, whose longest file is the longest of all.
    const project = (spec: TestSpecification) => (spec.project.name === "process" ? 0 : 1)
    // Array.prototype.sort is stable: the files not listed keep vitest's own order.
    return sorted.sort((a, b) => project(a) - project(b) || rank(a) - rank(b))
  }
}
