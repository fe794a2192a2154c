import type { Effect, Schema } from "effect"
import type { JsonSchemaInput, OutputSchema } from "../../agents/AgentOutput.js"
import type { ResultContext, ResultError, ResultValue } from "../../core/userCode.js"

/** A schema the builder takes: its Type is `A`, any encoding, no requirements. */
export type SchemaOf<A> = Schema.Schema<A, any, never>

export type { ResultContext, ResultError, ResultValue } from "../../core/userCode.js"

/** `suspend` as a step sees it: `data` is optional and untyped without a `suspendSchema`, required and typed with one. */
export type SuspendFn<S> = unknown extends S ? (reason: string, data?: unknown) => never
  : (reason: string, data: S) => never

/**
 * The `steps` record after a step with this id and output: one flat object type per step, no
 * intersection that grows with the chain. Written as a resolved conditional so the compiler shows (and
 * emits in .d.ts files) the record itself rather than the chain of aliases that made it, which for a long workflow
 * grew past what declaration emit serializes (TS7056).
 */
export type WithStep<S, K extends string, A> = S extends unknown ? {
    readonly [P in keyof S | K]: P extends K ? A : P extends keyof S ? S[P] : never
  }
  : never

/** The output of an inner step. */
export type InnerOutput<T> = T extends { readonly execute: (...args: never) => infer Ret } ? ResultValue<Ret> : never

/** The error of an inner step. */
export type InnerError<T> = T extends { readonly execute: (...args: never) => infer Ret } ? ResultError<Ret> : never

/** What an andAll gives: the tuple of its steps' outputs, in order. */
export type AllOutput<T extends ReadonlyArray<unknown>> = { -readonly [K in keyof T]: InnerOutput<T[K]> }

/** The `steps` record after an andAll/andRace: the outer id's output and every inner id's (`| undefined` when `Maybe`). */
export type WithInner<S, K extends string, A, T extends ReadonlyArray<{ readonly id: string }>, Maybe> = S extends
  unknown ? {
    readonly [P in keyof S | K | T[number]["id"]]: P extends K ? A
      : P extends T[number]["id"] ? InnerOutput<Extract<T[number], { readonly id: P }>> | Maybe
      : P extends keyof S ? S[P]
      : never
  }
  : never

/** The `steps` record after an andWhen: the outer id's output (`D | B`) and the inner id's (`B | undefined`). */
export type WithWhen<S, K extends string, KI extends string, D, B> = S extends unknown ? {
    readonly [P in keyof S | K | KI]: P extends K ? D | B
      : P extends KI ? B | undefined
      : P extends keyof S ? S[P]
      : never
  }
  : never

/** What an andAgent's prompt returns: the text, as a value, a Promise or an Effect. */
export type AgentPrompt = string | PromiseLike<string> | Effect.Effect<string, any, any>

/** What an andAgent's `output` may be: an Effect Schema, a JSON Schema, or nothing (text). */
export type AgentOutputSpec = OutputSchema<any> | JsonSchemaInput | undefined

/** The agent's answer for an `output`: the Schema's type, `unknown` for a JSON Schema, the text without one. */
export type AgentAnswer<Out> = [Out] extends [undefined] ? string
  : Out extends Schema.Schema<infer A, infer _I, infer _R> ? A
  : unknown

/** What `andWhen`'s condition may return. */
export type Condition = boolean | PromiseLike<boolean> | Effect.Effect<boolean, unknown, unknown>

export type InnerContext<T extends ReadonlyArray<unknown>> = T[number] extends infer U
  ? U extends { readonly execute: (...args: never) => infer Ret } ? ResultContext<Ret> : never
  : never

/** The errors an inner step's `execute` may fail with (each step's `E` is kept on its type). */
export type InnerErrors<T extends ReadonlyArray<unknown>> = InnerError<T[number]>
