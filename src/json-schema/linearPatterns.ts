import type { Options } from "ajv"
import { RE2JS, RE2JSSyntaxException } from "re2js"
import { messageOf } from "../core/errorMessages.js"
import { excerpt } from "../core/errors.js"

/**
 * JSON Schema `pattern`s and `patternProperties` run on RE2 (re2js), whose matching takes time linear in
 * the text, never JavaScript's backtracking RegExp: `^(a+)+$` over 40 `a`s and a `!` took 106 s there.
 * Linear is not cheap for a large program (an NFA step per character per instruction), so a pattern's
 * program is bounded and one validation may spend at most `PATTERN_WORK` (characters × instructions).
 */

/** The largest RE2 program (in instructions, `RE2JS.programSize`) a pattern may compile to. */
export const MAX_PATTERN_PROGRAM = 1_000
/** What one validation's pattern tests may cost together: the sum of (characters + 1) × program size. */
export const PATTERN_WORK = 5_000_000

/** Why a pattern cannot be used, as an issue's message; the pattern is quoted as an excerpt. */
export class UnusablePattern extends Error {}

/** One validation spent its `PATTERN_WORK`. */
export class PatternWorkExceeded extends Error {}

// ECMA-262's `\uXXXX` and `\u{X}` are RE2's `\x{X}`; an escaped backslash is kept as it is.
const toRe2Syntax = (pattern: string): string =>
  pattern.replace(
    /\\(\\|u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4}))/g,
    (whole, _escape, braced?: string, four?: string) => {
      const code = braced ?? four
      return code === undefined ? whole : `\\x{${code}}`
    }
  )

const quoted = (pattern: string) => `pattern "${excerpt(pattern)}"`

/** The compiled pattern, or an `UnusablePattern` saying why there is none. */
const compileLinear = (pattern: string): RE2JS => {
  let compiled: RE2JS
  try {
    compiled = RE2JS.compile(toRe2Syntax(pattern))
  } catch (error) {
    const reason = error instanceof RE2JSSyntaxException ? error.getDescription() : messageOf(error)
    throw new UnusablePattern(
      `${quoted(pattern)} is not supported (${reason}): patterns run on RE2, in time linear in the text, ` +
        "so backreferences and lookaround are not available"
    )
  }
  const size = compiled.programSize()
  if (size > MAX_PATTERN_PROGRAM) {
    throw new UnusablePattern(
      `${
        quoted(pattern)
      } is too large (an RE2 program of ${size} instructions; at most ${MAX_PATTERN_PROGRAM} are allowed)`
    )
  }
  return compiled
}

/** Undefined when `pattern` compiles within the bounds, else why not. */
export const patternProblem = (pattern: string): string | undefined => {
  try {
    compileLinear(pattern)
    return undefined
  } catch (error) {
    return messageOf(error)
  }
}

// Validation is synchronous: the budget of the validation under way, set by `withPatternWork`.
let remainingWork = Infinity

/** Runs a validation with a fresh `PATTERN_WORK` for its pattern tests. */
export const withPatternWork = <A>(validation: () => A): A => {
  remainingWork = PATTERN_WORK
  try {
    return validation()
  } finally {
    remainingWork = Infinity
  }
}

type RegExpEngine = NonNullable<NonNullable<Options["code"]>["regExp"]>

/** Ajv's `code.regExp`: patterns compiled by RE2, each test charged to the validation's work. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = compileLinear(pattern)
    const size = compiled.programSize()
    return {
      test: (text: string) => {
        remainingWork -= (text.length + 1) * size
        if (remainingWork < 0) {
          throw new PatternWorkExceeded(
            `testing ${
              quoted(pattern)
            } would exceed the ${PATTERN_WORK} units of work (characters × RE2 instructions) ` +
              "one validation may spend on patterns"
          )
        }
        return compiled.matcher(text).find()
      },
      // Ajv keys compiled patterns by this text: it must differ between patterns.
      toString: () => `/${pattern}/${flags}`
    }
  },
  { code: "linearRegExp" }
)
