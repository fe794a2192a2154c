import { Effect, Either, ParseResult } from "effect"
import { codePath, nonJsonValue } from "../../core/jsonValue.js"
import type { StepSpec } from "../definition/StepContext.js"
import { decodeValue, encodeValue } from "../execution/StepCodec.js"
import { formatBytes, jsonBytes } from "../execution/StoredValues.js"
import { inMemory as inMemoryCheckpoint } from "./InnerOutputs.js"
import { withInnerPolicy } from "./innerPolicy.js"
import { suspendingAt } from "./innerRunner.js"
import { LOOP_BOUNDS, type LoopStep } from "./Loops.js"
import { contextFor, inner, pathIn, runCode, type Running, type StepEnv } from "./stepCode.js"
import { StepFailed, type StepOutcome } from "./StepOutcome.js"

/**
 * The runtime of andForEach, andDoWhile/andDoUntil, andBranch and andMap (issue #31). What a crash must
 * not change (the items, every condition) is committed before the work it decides; each item,
 * iteration and branch output is committed as it completes (StepEnv.inner), so after a crash, resume or
 * takeover only uncommitted work runs again. Inside a child workflow their paths follow the parent
 * step's (`notify/send[2]`).
 */

type Of<T extends LoopStep["type"]> = Extract<LoopStep, { readonly type: T }>

const inMemory = inMemoryCheckpoint()

const failed = (step: { readonly id: string }, message: string) => new StepFailed({ stepId: step.id, message })

/** Runs an inner step under its policies (steps/innerPolicy.ts) with extra context fields (its `index` or `iteration`, its `path`). */
const runSpec = (
  env: StepEnv,
  outer: Running,
  spec: StepSpec,
  data: unknown,
  resumeData: unknown,
  extra: { readonly path: string; readonly [key: string]: unknown }
) => {
  const running = inner(outer, spec)
  return withInnerPolicy(
    env,
    spec,
    extra.path,
    (env) =>
      runCode(
        spec.id,
        (signal) => spec.execute(Object.assign(contextFor(env, running, data, resumeData, signal), extra))
      )
  ).pipe(suspendingAt(extra.path))
}

/** An inner output's stored form: encoded by its step's schema, JSON, within the bound of an item. */
const storedInner = (outer: { readonly id: string }, path: string, spec: StepSpec, output: unknown) => {
  const encoded = encodeValue(spec.outputSchema, output)
  if (Either.isLeft(encoded)) {
    return Either.left(
      failed(
        outer,
        `${path}: output does not match its schema: ${ParseResult.TreeFormatter.formatErrorSync(encoded.left)}`
      )
    )
  }
  const problem = nonJsonValue(encoded.right, { strict: true })
  if (problem !== undefined) {
    const at = problem.path.length === 0 ? "" : ` at ${codePath(problem.path)}`
    return Either.left(
      failed(outer, `${path} returned ${problem.what}${at}, which JSON does not carry (${problem.why})`)
    )
  }
  const bytes = jsonBytes(encoded.right)
  if (bytes > LOOP_BOUNDS.itemBytes) {
    return Either.left(
      failed(
        outer,
        `${path}: its output is ${formatBytes(bytes)} as JSON, over the ${
          formatBytes(LOOP_BOUNDS.itemBytes)
        } an item or iteration may be`
      )
    )
  }
  return Either.right({ stored: encoded.right, bytes })
}

const restoredInner = (spec: StepSpec, stored: unknown) =>
  Either.getOrElse(decodeValue(spec.outputSchema, stored, false), () => stored)

const isCount = (value: unknown, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= max

/** Why what `items` gave cannot be iterated, if it cannot. */
const itemsProblem = (items: unknown): string | undefined => {
  if (!Array.isArray(items)) return `items must be an array, not ${items === null ? "null" : typeof items}`
  if (items.length > LOOP_BOUNDS.items) {
    return `items has ${items.length} items, over the ${LOOP_BOUNDS.items} an andForEach may iterate`
  }
  const problem = nonJsonValue(items, { strict: true })
  if (problem !== undefined) {
    return `items holds ${problem.what} at ${codePath(problem.path)}: items are stored as JSON (${problem.why})`
  }
  const bytes = jsonBytes(items)
  return bytes > LOOP_BOUNDS.outputBytes
    ? `items is ${formatBytes(bytes)} as JSON, over the ${formatBytes(LOOP_BOUNDS.outputBytes)} it may be`
    : undefined
}

const forEach = (env: StepEnv, step: Of<"andForEach">, data: unknown, resumeData: unknown) =>
  Effect.gen(function*() {
    const checkpoint = env.inner ?? inMemory
    const concurrency = step.concurrency ?? 1
    if (!isCount(concurrency, LOOP_BOUNDS.concurrency)) {
      return yield* failed(
        step,
        `concurrency must be an integer from 1 to ${LOOP_BOUNDS.concurrency}, not ${String(concurrency)}`
      )
    }
    const itemsPath = pathIn(env, `${step.id}#items`)
    let items = checkpoint.committed.get(itemsPath) as ReadonlyArray<unknown> | undefined
    if (items === undefined) {
      const given = yield* runCode(step.id, (signal) => step.items(contextFor(env, step, data, resumeData, signal)))
      const problem = itemsProblem(given)
      if (problem !== undefined) return yield* failed(step, problem)
      items = given
      yield* checkpoint.commit([{ path: itemsPath, value: items }])
    }
    const outputs = new Array<unknown>(items.length)
    const pending: Array<number> = []
    let total = 0
    items.forEach((_, index) => {
      const path = pathIn(env, `${step.id}[${index}]`)
      if (!checkpoint.committed.has(path)) return pending.push(index)
      const stored = checkpoint.committed.get(path)
      total += jsonBytes(stored)
      outputs[index] = restoredInner(step.step, stored)
    })
    const all = items
    yield* Effect.forEach(pending, (index) => {
      const path = pathIn(env, `${step.id}[${index}]`)
      return runSpec(env, step, step.step, all[index], resumeData, { index, path }).pipe(
        Effect.flatMap((output) => {
          const stored = storedInner(step, path, step.step, output)
          if (Either.isLeft(stored)) return Effect.fail(stored.left)
          total += stored.right.bytes
          if (total > LOOP_BOUNDS.outputBytes) {
            return Effect.fail(
              failed(
                step,
                `its items' outputs are over the ${formatBytes(LOOP_BOUNDS.outputBytes)} a step's output may be as JSON`
              )
            )
          }
          outputs[index] = output
          return checkpoint.commit([{ path, value: stored.right.stored }], {
            from: step.step.id,
            path,
            stepType: step.type,
            output: stored.right.stored
          })
        })
      )
    }, { concurrency, discard: true })
    return outputs
  })

const loop = (env: StepEnv, step: Of<"andDoWhile" | "andDoUntil">, data: unknown, resumeData: unknown) =>
  Effect.gen(function*() {
    const checkpoint = env.inner ?? inMemory
    const max = step.maxIterations ?? LOOP_BOUNDS.defaultMaxIterations
    let iteration = 0
    let current = data
    // Committed iterations: their outputs and what their condition decided.
    const pathOf = (iteration: number) => pathIn(env, `${step.id}[${iteration}]`)
    while (checkpoint.committed.has(`${pathOf(iteration)}#next`)) {
      current = restoredInner(step.step, checkpoint.committed.get(pathOf(iteration)))
      const next = checkpoint.committed.get(`${pathOf(iteration)}#next`) === true
      iteration++
      if (!next) return current
    }
    for (;;) {
      if (iteration >= max) {
        return yield* failed(
          step,
          `reached its maxIterations (${max}) and its condition still asks for another iteration`
        )
      }
      const path = pathOf(iteration)
      const extra = { iteration, path }
      const output = yield* runSpec(env, step, step.step, current, resumeData, extra)
      const stored = storedInner(step, path, step.step, output)
      if (Either.isLeft(stored)) return yield* stored.left
      const holds = yield* runCode(
        step.id,
        (signal) => step.condition(Object.assign(contextFor(env, step, output, resumeData, signal), extra))
      )
      const next = step.type === "andDoWhile" ? Boolean(holds) : !holds
      yield* checkpoint.commit(
        [{ path, value: stored.right.stored }, { path: `${path}#next`, value: next }],
        { from: step.step.id, path, stepType: step.type, output: stored.right.stored }
      )
      current = output
      iteration++
      if (!next) return output
    }
  })

const branch = (env: StepEnv, step: Of<"andBranch">, data: unknown, resumeData: unknown) =>
  Effect.gen(function*() {
    const checkpoint = env.inner ?? inMemory
    const conditionsPath = pathIn(env, `${step.id}#conditions`)
    let verdicts = checkpoint.committed.get(conditionsPath) as ReadonlyArray<boolean> | undefined
    if (verdicts === undefined) {
      verdicts = yield* Effect.forEach(step.branches, (one) =>
        Effect.map(
          runCode(step.id, (signal) => one.condition(contextFor(env, step, data, resumeData, signal))),
          Boolean
        ))
      yield* checkpoint.commit([{ path: conditionsPath, value: verdicts }])
    }
    const holds = verdicts
    const outputs = new Array<unknown>(step.branches.length).fill(undefined)
    yield* Effect.forEach(step.branches, (one, i) => {
      if (holds[i] !== true) {
        return Effect.void
      }
      const path = pathIn(env, `${step.id}/${one.step.id}`)
      if (checkpoint.committed.has(path)) {
        outputs[i] = restoredInner(one.step, checkpoint.committed.get(path))
        return Effect.void
      }
      return runSpec(env, step, one.step, data, resumeData, { path }).pipe(Effect.flatMap((output) => {
        const stored = storedInner(step, path, one.step, output)
        if (Either.isLeft(stored)) return Effect.fail(stored.left)
        outputs[i] = output
        return checkpoint.commit([{ path, value: stored.right.stored }], {
          from: one.step.id,
          path,
          stepType: step.type,
          output: stored.right.stored
        })
      }))
    }, { concurrency: "unbounded", discard: true })
    return outputs
  })

const map = (env: StepEnv, step: Of<"andMap">, data: unknown, resumeData: unknown) =>
  Effect.gen(function*() {
    const keys = Object.keys(step.map)
    if (keys.length > LOOP_BOUNDS.mapKeys) {
      return yield* failed(step, `map has ${keys.length} keys, over the ${LOOP_BOUNDS.mapKeys} it may have`)
    }
    const values = yield* Effect.forEach(keys, (key) =>
      runCode(step.id, (signal) =>
        step.map[key](
          Object.assign(contextFor(env, step, data, resumeData, signal), { path: pathIn(env, `${step.id}/${key}`) })
        )), {
      concurrency: LOOP_BOUNDS.mapConcurrency
    })
    return Object.fromEntries(keys.map((key, i) => [key, values[i]]))
  })

/** One loop or branch step's output for its input (see runStep). */
export const runLoopStep = (
  env: StepEnv,
  step: LoopStep,
  data: unknown,
  resumeData: unknown
): Effect.Effect<unknown, StepOutcome> => {
  switch (step.type) {
    case "andForEach":
      return forEach(env, step, data, resumeData)
    case "andDoWhile":
    case "andDoUntil":
      return loop(env, step, data, resumeData)
    case "andBranch":
      return branch(env, step, data, resumeData)
    case "andMap":
      return map(env, step, data, resumeData)
  }
}
