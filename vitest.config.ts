import { defineConfig } from "vitest/config"
import { PROCESS_TESTS } from "./test/process-tests.js"
import SlowFirstSequencer from "./test/support/slowFirstSequencer.js"

// Two projects that together are the whole suite: "process" (the tests that run dist/main.js as a
// process, run on every Node line: `vitest run --project process`) and "unit" (the rest).
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time: most tests wait on sockets and child processes, and vitest's default on 2 cores
    // is one (cpus - 1), which ran the suite file after file (736 s; 138 s of it importing).
    maxWorkers: 2,
    minWorkers: 1,
    // A worker process runs file after file of the "unit" project with the modules it already imported
    // (src, effect, the AI SDK: about 2 s of CPU a file, most of the collect phase; issue #43). The
    // "process" project's files share worker processes too but import their modules afresh each
    // (`isolate: true` below). vitest starts fresh workers for each project, and the files that measure
    // the heap start the "unit" project (test/support/slowFirstSequencer.ts).
    poolOptions: { forks: { isolate: false } },
    // The longest files first (test/support/slowFirstSequencer.ts), so that none starts last and runs alone.
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ["default", "./test/support/summaryReporter.ts"],
    projects: [
      {
        extends: true,
        test: { name: "process", isolate: true, poolOptions: { forks: { isolate: true } }, include: [...PROCESS_TESTS] }
      },
      {
        extends: true,
        test: { name: "unit", isolate: false, include: ["test/**/*.test.ts"], exclude: [...PROCESS_TESTS] }
      }
    ]
  }
})
