/** Where and when a bench run happened: the machine, the date and the commit measured. */
import { execFileSync } from "node:child_process"
import { cpus, totalmem } from "node:os"
import { REPO_ROOT } from "./processes.js"

export interface Environment {
  readonly date: string
  readonly commit: string
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly node: string
  readonly openFilesLimit: string
}

const git = (...args: ReadonlyArray<string>) => {
  try {
    return execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
  } catch {
    return "unknown"
  }
}

const openFilesLimit = () => {
  try {
    return execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim()
  } catch {
    return "unknown"
  }
}

export const describeEnvironment = (): Environment => ({
  date: new Date().toISOString(),
  commit: `${git("rev-parse", "--short", "HEAD")}${
    git("status", "--porcelain", "--untracked-files=no") === "" ? "" : " (with uncommitted changes)"
  }`,
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
  node: process.version,
  openFilesLimit: openFilesLimit()
})
