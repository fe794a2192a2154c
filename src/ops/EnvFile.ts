import { Data, Effect } from "effect"
import { randomUUID } from "node:crypto"
import { open, readFile, realpath, rename, unlink } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { messageOf } from "../core/errorMessages.js"

/** The env file could not be read or written; `message` says why. */
export class EnvFileWriteFailed extends Data.TaggedError("EnvFileWriteFailed")<{ readonly message: string }> {}

const ASSIGNMENT = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/

/**
 * How a value is written so that Node's reader (`process.loadEnvFile`, `util.parseEnv`) and dotenv read
 * it back unchanged, in order of preference:
 * - bare when plain (`[A-Za-z0-9_.,:@+=/~-]`);
 * - in single quotes when it has no `'` (both read them literally);
 * - in double quotes when it has no `"` and no `\` (both expand `\n` there, and neither unescapes `\"`);
 * - in backticks when it has no backtick (read literally);
 * - bare when it has all three quotes but no `#` (a comment when bare), does not start with a quote
 *   and has no space at either end (bare values are trimmed).
 * Anything else (and NUL, CR, LF, which no reader keeps) cannot round-trip: `envValueProblem` says why.
 */
const encodings: ReadonlyArray<(value: string) => string | undefined> = [
  (value) => (/^[A-Za-z0-9_.,:@+=\/~-]*$/.test(value) ? value : undefined),
  (value) => (value.includes("'") ? undefined : `'${value}'`),
  (value) => (/["\\]/.test(value) ? undefined : `"${value}"`),
  (value) => (value.includes("`") ? undefined : `\`${value}\``),
  (value) => (/^[^\s'"`#][^#]*$/.test(value) && !/\s$/.test(value) ? value : undefined)
]

const encodeValue = (value: string): string | undefined => {
  if (/[\0\r\n]/.test(value)) return undefined
  for (const encode of encodings) {
    const encoded = encode(value)
    if (encoded !== undefined) return encoded
  }
  return undefined
}

/** Why the value cannot be written to an env file so that it reads back unchanged, if it cannot. */
export const envValueProblem = (value: string): string | undefined => {
  if (value.includes("\0")) return "must not contain a NUL character"
  if (/[\r\n]/.test(value)) return "must not contain a newline"
  return encodeValue(value) === undefined
    ? "cannot be written to .env unchanged: it has ', \" and ` and would need quoting (or has # or spaces at an end)"
    : undefined
}

const formatValue = (value: string): string => {
  const encoded = encodeValue(value)
  if (encoded === undefined) throw new Error(`a value ${envValueProblem(value)}`)
  return encoded
}

// A quoted value left open on its line continues on the next ones (dotenv's multi-line values).
const continuedLines = (lines: ReadonlyArray<string>, index: number, rawValue: string): number => {
  const quote = rawValue[0]
  if (!["'", "\"", "`"].includes(quote) || rawValue.indexOf(quote, 1) !== -1) return 0
  const end = lines.findIndex((line, i) => i > index && line.includes(quote))
  return end === -1 ? 0 : end - index
}

/**
 * The text of an env file with `values` set: each key's first assignment is replaced in place (keeping an
 * `export ` prefix), later ones are dropped, missing keys are appended; every other line stays as it was.
 */
export const setEnvValues = (text: string, values: ReadonlyArray<readonly [string, string]>): string => {
  const eol = text.includes("\r\n") ? "\r\n" : "\n"
  const lines = text === "" ? [] : text.replace(/\r?\n$/, "").split(/\r?\n/)
  const wanted = new Map(values)
  const written = new Set<string>()
  const out: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const match = ASSIGNMENT.exec(lines[i])
    const key = match?.[2]
    if (match === null || key === undefined || !wanted.has(key)) {
      out.push(lines[i])
      continue
    }
    i += continuedLines(lines, i, match[3])
    if (!written.has(key)) out.push(`${match[1]}${key}=${formatValue(wanted.get(key)!)}`)
    written.add(key)
  }
  for (const [key, value] of values) if (!written.has(key)) out.push(`${key}=${formatValue(value)}`)
  return out.join(eol) + eol
}

const readIfExists = (path: string) =>
  readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => (error.code === "ENOENT" ? "" : Promise.reject(error)))

/**
 * Sets the values in the env file atomically: the new text goes to a temporary file beside it, created
 * with mode 0600 (chmod too, whatever the umask), flushed, then renamed over the file, so the file is
 * never seen half-written or with a wider mode. A symlinked file
 * is written through to its target. The temporary file never outlives a failure.
 */
export const writeEnvValues = (
  path: string,
  values: ReadonlyArray<readonly [string, string]>
): Effect.Effect<void, EnvFileWriteFailed> =>
  Effect.tryPromise({
    try: async () => {
      const target = await realpath(path).catch(() => path)
      const text = setEnvValues(await readIfExists(target), values)
      const temp = join(dirname(target), `.${basename(target)}.${randomUUID()}.tmp`)
      try {
        const handle = await open(temp, "wx", 0o600)
        try {
          await handle.chmod(0o600)
          await handle.writeFile(text, "utf8")
          await handle.sync()
        } finally {
          await handle.close()
        }
        await rename(temp, target)
      } catch (error) {
        await unlink(temp).catch(() => {})
        throw error
      }
    },
    catch: (error) => new EnvFileWriteFailed({ message: messageOf(error) })
  })
