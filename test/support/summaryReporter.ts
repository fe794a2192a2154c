import type { Reporter, TestModule } from "vitest/node"

type Counts = { passed: number; failed: number; skipped: number }
const line = ({ failed, passed, skipped }: Counts) => `${passed} passed, ${failed} failed, ${skipped} skipped`

/**
 * Ends the run with one plain line, `tests: N passed, N failed, N skipped`, that any CI can read, after one
 * such line per project (`tests in process: ...`), so that a change to the suite can show it dropped nothing.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    const counts: Counts = { passed: 0, failed: 0, skipped: 0 }
    const byProject = new Map<string, Counts>()
    const add = (project: Counts, key: keyof Counts) => {
      counts[key]++
      project[key]++
    }
    for (const module of modules) {
      const name = module.project.name
      const project = byProject.get(name) ?? { passed: 0, failed: 0, skipped: 0 }
      byProject.set(name, project)
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === "passed") add(project, "passed")
        else if (state === "failed") add(project, "failed")
        else add(project, "skipped")
      }
      if (module.state() === "failed" && module.children.size === 0) add(project, "failed")
    }
    const projects = [...byProject].sort(([a], [b]) => a.localeCompare(b))
      .map(([name, project]) => `tests in ${name}: ${line(project)}\n`).join("")
    process.stdout.write(`\n${projects}tests: ${line(counts)}\n`)
  }
}
