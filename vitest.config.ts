import { defineConfig } from "vitest/config"
import { PROCESS_TESTS } from "./test/process-tests.js"

// Two projects that together are the whole suite: "process" (the tests that run dist/main.js as a
// process, run on every Node line: `vitest run --project process`) and "unit" (the rest).
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/support/summaryReporter.ts"],
    projects: [
      { extends: true, test: { name: "process", include: [...PROCESS_TESTS] } },
      { extends: true, test: { name: "unit", include: ["test/**/*.test.ts"], exclude: [...PROCESS_TESTS] } }
    ]
  }
})
