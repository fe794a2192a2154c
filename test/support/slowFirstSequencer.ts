import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * The files that took longest in a whole run (issue #43's profile, Node 24 on 2 cores), longest first. On a
 * fresh clone vitest has no durations of its own and runs files in the order it found them, so one of
 * these could start last and run alone while the other worker idles; started first, the short files fill
 * in around them. Only an order: a file missing here runs after these, as vitest would order it.
 */
export const SLOWEST = [
  "test/shutdown.test.ts",
  "test/concurrency-bounds.test.ts",
  "test/concurrency-instances.test.ts",
  "test/reattach-pages.test.ts",
  "test/workflow-retry-process.test.ts",
  "test/store-failures.test.ts",
  "test/webhooks-fairness.test.ts",
  "test/scale-out.test.ts",
  "test/execution-ownership.test.ts",
  "test/upgrade-fixtures.test.ts",
  "test/reattach-cost.test.ts",
  "test/cli.test.ts",
  "test/workflow-timers.test.ts",
  "test/execution-bytes.test.ts",
  "test/workflow-step-outputs-fencing.test.ts",
  "test/workflow-type-errors.test.ts",
  "test/workflow-replay.test.ts",
  "test/agent-bounds.test.ts",
  "test/workflow-tool-approval.test.ts",
  "test/health.test.ts",
  "test/group-commit.test.ts",
  "test/workflow-definition-changes.test.ts",
  "test/node-lines.test.ts",
  "test/ownership-store.test.ts",
  "test/workflow-loops.test.ts"
]

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    // After a run here vitest has every file's duration (node_modules/.vite) and orders longest first itself.
    const measured = files.every((spec) =>
      this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`)
        !== undefined
    )
    if (measured) return sorted
    const rank = (spec: TestSpecification) => {
      const index = SLOWEST.findIndex((file) => spec.moduleId.endsWith(`/${file}`))
      return index === -1 ? SLOWEST.length : index
    }
    // Array.prototype.sort is stable: the files not listed keep vitest's own order.
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}
