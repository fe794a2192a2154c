import { Duration, Effect } from "effect"
import { spawn } from "node:child_process"
import { ExecutionFailed } from "../core/errors.js"
import type { Dependency } from "./dependencies.js"

/** Keeps only the last `limit` bytes of what is pushed into it. */
class Tail {
  private chunks: Array<Buffer> = []
  private size = 0
  constructor(private readonly limit: number) {}
  push(chunk: Buffer) {
    this.chunks.push(chunk)
    this.size += chunk.length
    while (this.size - this.chunks[0].length >= this.limit) this.size -= this.chunks.shift()!.length
  }
  toString() {
    return Buffer.concat(this.chunks).subarray(-this.limit).toString("utf8")
  }
}

interface NpmRun {
  readonly exitCode: number | null
  readonly signal: string | null
  /** The last 64 KiB of stdout and stderr, interleaved as they came. */
  readonly output: string
  /** The last 8 KiB of stderr alone, for the error message. */
  readonly stderr: string
}

const OUTPUT_LIMIT = 64 * 1024
const KILL_GRACE_MS = 2_000

/**
 * `npm <args>` as a child process (never the synchronous spawn: the event loop stays free). Interrupting
 * the effect stops npm (SIGTERM, SIGKILL after 2 s) and waits until it has exited.
 */
const runNpm = (args: ReadonlyArray<string>, cwd: string): Effect.Effect<NpmRun, Error> =>
  Effect.async<NpmRun, Error>((resume) => {
    const child = spawn("npm", args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    const output = new Tail(OUTPUT_LIMIT)
    const stderr = new Tail(8 * 1024)
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => {
      output.push(chunk)
      stderr.push(chunk)
    })
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()))
    // A child that cannot start emits "error" and may still emit "close": answer once.
    let done = false
    const finish = (effect: Effect.Effect<NpmRun, Error>) => {
      if (!done) resume(effect)
      done = true
    }
    child.once("error", (error) => finish(Effect.fail(error)))
    child.once(
      "close",
      (exitCode, signal) =>
        finish(Effect.succeed({ exitCode, signal, output: output.toString(), stderr: stderr.toString() }))
    )
    return Effect.promise(() => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve()
      child.kill("SIGTERM")
      const force = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS)
      return closed.finally(() => clearTimeout(force))
    })
  })

/** A dependency to install, with the registry's latest version when it is known. */
export type InstallTarget = Dependency & { readonly latest: string | undefined }

// npm saves the range it is given, but turns an exact version into its save-prefix range unless told
// --save-exact: so `^`/`~` ranges are installed as `name@^latest`, exact pins in a run of their own.
const rangeStyle = (range: string) => /^([~^]?)\d+\.\d+\.\d+([-+][\w.+-]*)?$/.exec(range.trim())?.[1]

const spec = ({ latest, name, range }: InstallTarget) => {
  const style = rangeStyle(range)
  return latest !== undefined && style !== undefined ? `${name}@${style}${latest}` : `${name}@latest`
}

const failed = (message: string) => new ExecutionFailed({ message })

// npm's own error lines when there are some (its warnings come first and say little).
const lastLines = (text: string) => {
  const lines = text.trim().split(/\r?\n/)
  const errors = lines.filter((line) => /^npm (error|ERR!)/.test(line))
  return (errors.length > 0 ? errors : lines).slice(-10).join("\n").slice(-2000)
}

/**
 * `npm install` of the targets' latest versions into the project, against the registry. Fails with npm's
 * last lines of stderr; stopped (and failed) after `timeoutMs`. Succeeds with npm's output.
 */
export const npmInstall = (
  targets: ReadonlyArray<InstallTarget>,
  options: { readonly projectDir: string; readonly registry: string; readonly timeoutMs: number }
): Effect.Effect<string, ExecutionFailed> =>
  Effect.gen(function*() {
    const exact = targets.filter((target) => rangeStyle(target.range) === "")
    const ranged = targets.filter((target) => rangeStyle(target.range) !== "")
    const flags = [
      "--prefix",
      options.projectDir,
      "--registry",
      options.registry,
      "--no-audit",
      "--no-fund",
      "--no-update-notifier"
    ]
    let output = ""
    for (const [group, extra] of [[ranged, []], [exact, ["--save-exact"]]] as const) {
      if (group.length === 0) continue
      const run = yield* runNpm(["install", ...group.map(spec), ...flags, ...extra], options.projectDir).pipe(
        Effect.mapError((error) => failed(`Could not run npm: ${error.message}`))
      )
      output = (output + run.output).slice(-OUTPUT_LIMIT)
      if (run.exitCode !== 0) {
        const how = run.signal === null ? `exit code ${run.exitCode}` : `signal ${run.signal}`
        return yield* failed(`npm install failed (${how}): ${lastLines(run.stderr)}`)
      }
    }
    return output
  }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(options.timeoutMs),
      onTimeout: () => failed(`npm install did not finish within ${options.timeoutMs} ms and was stopped`)
    })
  )
