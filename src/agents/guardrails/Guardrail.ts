/**
 * `guardrails/`: input and output guardrails. This file is their public definition (the ready-made
 * ones included); the rest runs them and plugs them into the generation core (plugin.ts). The folder
 * may import the agent's definition, the call context and the core's contract, never the registry.
 */
import type { Effect } from "effect"
import type { ResultContext } from "../../core/userCode.js"
import type { AgentCallContext } from "../callContext.js"
import { normalizeForMatching, replaceNormalized } from "./normalize.js"

/** What a guardrail decides: let the text through, replace it, or stop the call with a message the client sees. */
export type GuardrailDecision =
  | { readonly _tag: "pass" }
  | { readonly _tag: "rewrite"; readonly text: string }
  | { readonly _tag: "block"; readonly message: string }

/**
 * What an input guardrail sees: what the model will read of each message the client sent (in /chat
 * too), of any role: its text, and each reasoning, tool call's input, tool result and text or JSON file
 * (decoded) on its own. Ready-made guardrails match it normalised (normalizeForMatching).
 */
export interface InputGuardrailArgs {
  readonly text: string
  /** The role of the message it comes from (a client sends the assistant's and the tools' too); a denial's reason is the tool's. */
  readonly role?: InputRole | undefined
  readonly call: AgentCallContext
}

export type InputRole = "user" | "assistant" | "tool"

/**
 * What an output guardrail sees. For /text and /object: the whole answer (`final` true). While a
 * stream runs: the text not sent yet, the last `holdBack` characters of what came being held back so
 * a pattern spanning two deltas is seen whole; `final` is true when no more text follows it. Each
 * tool result the client receives, whole (`final` true): a string as it is, another value as its JSON
 * text (a rewrite that is no longer JSON is sent as text). The model itself reads the raw result.
 */
export interface OutputGuardrailArgs {
  readonly text: string
  readonly final: boolean
  readonly call: AgentCallContext
}

type Check<Args, R> = (
  args: Args
) => GuardrailDecision | PromiseLike<GuardrailDecision> | Effect.Effect<GuardrailDecision, unknown, R>

export interface InputGuardrail<out R = never> {
  readonly stage: "input"
  readonly name: string
  readonly check: Check<InputGuardrailArgs, R>
}

export interface OutputGuardrail<out R = never> {
  readonly stage: "output"
  readonly name: string
  readonly check: Check<OutputGuardrailArgs, R>
  /** Characters a stream holds back before sending (default 64): the longest match it can catch across deltas. */
  readonly holdBack: number
}

/** Default hold-back of a streamed answer, in characters. */
export const DEFAULT_HOLD_BACK = 64
/** The longest hold-back a guardrail may ask for. */
export const MAX_HOLD_BACK = 4096

const checkName = (name: string) => {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(name)) throw new Error(`Guardrail name "${name}": 1 to 64 of A-Z a-z 0-9 _ . : -`)
}

const pass: GuardrailDecision = { _tag: "pass" }

/** Guardrails and their decisions; `R` is what a guardrail's check requires (it joins the agent's). */
export const Guardrail = {
  pass,
  rewrite: (text: string): GuardrailDecision => ({ _tag: "rewrite", text }),
  block: (message: string): GuardrailDecision => ({ _tag: "block", message }),
  /** Runs before the model sees anything, on each message the client sent (see InputGuardrailArgs). */
  input: <Ret extends ReturnType<Check<InputGuardrailArgs, unknown>>>(options: {
    readonly name: string
    readonly check: (args: InputGuardrailArgs) => Ret
  }): InputGuardrail<ResultContext<Ret>> => {
    checkName(options.name)
    return { stage: "input", name: options.name, check: options.check as Check<InputGuardrailArgs, never> }
  },
  /** Runs on the answer (whole for /text and /object, as it streams for /stream and /chat) and on each tool result. */
  output: <Ret extends ReturnType<Check<OutputGuardrailArgs, unknown>>>(options: {
    readonly name: string
    readonly check: (args: OutputGuardrailArgs) => Ret
    readonly holdBack?: number
  }): OutputGuardrail<ResultContext<Ret>> => {
    checkName(options.name)
    const holdBack = options.holdBack ?? DEFAULT_HOLD_BACK
    if (!Number.isInteger(holdBack) || holdBack < 0 || holdBack > MAX_HOLD_BACK) {
      throw new Error(`Guardrail "${options.name}" holdBack: an integer from 0 to ${MAX_HOLD_BACK}`)
    }
    return { stage: "output", name: options.name, check: options.check as Check<OutputGuardrailArgs, never>, holdBack }
  }
} as const

// Matched on the normalised text (normalize.ts), so case-insensitively whatever the pattern's flags.
const matcherOf = (pattern: RegExp) => {
  const flags = new Set([...pattern.flags, "g", "i"])
  flags.delete("y")
  return new RegExp(pattern.source, [...flags].join(""))
}

const escaped = (word: string) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Blocks an input longer than `max` characters. */
export const maxInputLength = (max: number, message = `The input is longer than ${max} characters`) =>
  Guardrail.input({
    name: "max-input-length",
    check: ({ text }) => (text.length > max ? Guardrail.block(message) : Guardrail.pass)
  })

/**
 * Replaces every match of `pattern` with `replacement` ("[redacted]" by default, taken literally), in
 * the input or the answer. The pattern runs on the normalised text (NFKC, no zero-width or other format
 * characters, case-folded: normalize.ts); the characters a match came from are replaced.
 */
export const regexRedactor = (pattern: RegExp, replacement = "[redacted]", name = "regex-redactor") => {
  const matcher = matcherOf(pattern)
  const redact = (text: string) => {
    const redacted = replaceNormalized(text, matcher, replacement)
    return redacted === undefined ? Guardrail.pass : Guardrail.rewrite(redacted)
  }
  return {
    input: Guardrail.input({ name, check: ({ text }) => redact(text) }),
    output: Guardrail.output({ name, check: ({ text }) => redact(text) })
  }
}

/**
 * Blocks text holding any of `words` (whole words, any case, matched on the normalised text: fullwidth
 * forms and zero-width characters inside a word do not hide it), in the input or the answer. While a
 * stream runs, a word at the very end of the text seen so far waits for the next character.
 */
export const blocklist = (
  words: ReadonlyArray<string>,
  message = "The text holds a blocked word",
  name = "blocklist"
) => {
  // Words of any script, and words such as "c++" that end in a symbol: a "word" is not next to a letter or digit.
  const alternatives = `(?<![\\p{L}\\p{N}_])(?:${words.map((word) => escaped(normalizeForMatching(word))).join("|")})`
  const whole = new RegExp(`${alternatives}(?![\\p{L}\\p{N}_])`, "iu")
  const ended = new RegExp(`${alternatives}(?=[^\\p{L}\\p{N}_])`, "iu")
  const blocked = (text: string, final: boolean) =>
    words.length > 0 && (final ? whole : ended).test(normalizeForMatching(text))
  return {
    input: Guardrail.input({
      name,
      check: ({ text }) => (blocked(text, true) ? Guardrail.block(message) : Guardrail.pass)
    }),
    output: Guardrail.output({
      name,
      check: ({ final, text }) => (blocked(text, final) ? Guardrail.block(message) : Guardrail.pass)
    })
  }
}
