/**
 * The test files that run the built service (`node dist/main.js`, or the packed package) as a process.
 * They form the vitest project "process", which CI runs on every supported Node line (scripts/node-line);
 * the whole suite runs on the primary line. test/node-lines.test.ts fails when a test file that spawns
 * dist/main.js is missing here. The idle-heap test is here for its V8 dependence (issue #28 point 10).
 */
export const PROCESS_TESTS = [
  "test/chaos.test.ts",
  "test/cli.test.ts",
  "test/cluster-startup.test.ts",
  "test/connection-reset.test.ts",
  "test/embedding-pack.test.ts",
  "test/encoded-storage-process.test.ts",
  "test/fuzz.test.ts",
  "test/idle-heap.test.ts",
  "test/instance-restart.test.ts",
  "test/logs-instances.test.ts",
  "test/node-lines.test.ts",
  "test/otel-export.test.ts",
  "test/rpc.test.ts",
  "test/scale-out.test.ts",
  "test/schedules-process.test.ts",
  "test/shutdown.test.ts",
  "test/upgrade-fixtures.test.ts",
  "test/webhooks-process.test.ts",
  "test/workflow-crash.test.ts",
  "test/workflow-loops-process.test.ts",
  "test/workflow-retry-process.test.ts",
  "test/workflow-timers-instances.test.ts",
  "test/workflow-timers-process.test.ts"
] as const
