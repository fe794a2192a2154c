import { readdirSync } from "node:fs"
import { join } from "node:path"

// Issue #30 (settled 13): the mistake fixtures of test/type-fixtures and the one diagnostic each must
// give, read by test/workflow-type-errors.test.ts (the repo's TypeScript, its compiler API) and
// test/workflow-type-errors-ts7.test.ts (the newest TypeScript 7.x a user installs, its `tsc`). A new
// fixture needs its row here and is then checked under both.

export const ROOT = join(import.meta.dirname, "..", "..")
/** Each file must give exactly its one expected diagnostic. */
export const FIXTURES = join(ROOT, "test/type-fixtures")
/** Each file must compile with no diagnostic at all (settled 14: no TS2589 on a large workflow or app). */
export const OK_FIXTURES = join(ROOT, "test/type-fixtures-ok")

export interface Expected {
  readonly code: number
  /** Fragments the message must hold (the field, the type or the service it names). */
  readonly names: ReadonlyArray<string>
  /** Fragments the message's first line must hold (what an editor's hover and a one-line log show). */
  readonly firstLine?: ReadonlyArray<string>
  /** Where TypeScript 7 words the same diagnostic differently: its fragments instead of `names`. */
  readonly ts7?: { readonly names: ReadonlyArray<string> }
}

/** Each fixture: the one diagnostic it must give (code, and what its message names). */
export const expected: Record<string, Expected> = {
  "data-field.ts": { code: 2551, names: ["'greting'", "{ greeting: string; }"] },
  "input-field.ts": { code: 2339, names: ["'nmae'", "readonly name: string"] },
  "steps-field.ts": { code: 2551, names: ["'totl'", "total: number"] },
  "steps-id.ts": { code: 2551, names: ["'load-tiket'", "\"load-ticket\""] },
  "resume-field.ts": { code: 2551, names: ["'aproved'", "readonly approved: boolean"] },
  "suspend-data.ts": { code: 2561, names: ["'amout'", "readonly amount: number"] },
  "suspend-missing.ts": { code: 2554, names: ["Expected 2 arguments, but got 1"] },
  "child-input.ts": {
    code: 2769,
    names: ["'ticketId' is missing", "readonly name: string"],
    // TypeScript 7 reports only the last overload's failure ("The last overload gave the following
    // error."): andWorkflow's with `input`, missing here. It still names the child's input type.
    ts7: {
      names: [
        "The last overload gave the following error",
        "Property 'input' is missing",
        "WorkflowDefinition<{ readonly ticketId: string; }"
      ]
    }
  },
  "child-input-mapped.ts": { code: 2769, names: ["'{ ticket: string; }'", "readonly ticketId: string"] },
  "child-result.ts": { code: 2339, names: ["'name'", "{ readonly ok: boolean; }"] },
  "result-mismatch.ts": {
    code: 2739,
    names: ["LastDataDoesNotFitResult<{ greting: string; }, { readonly greeting: string; }"],
    firstLine: ["LastDataDoesNotFitResult<{ greting: string; }, { readonly greeting: string; }", "WorkflowDefinition"]
  },
  "all-tuple.ts": { code: 2493, names: ["'[string, number]'", "index '2'"] },
  "all-inner-type.ts": { code: 2339, names: ["'toUpperCase'", "type 'number'"] },
  "when-union.ts": { code: 2339, names: ["'doubled'"] },
  "when-inner-undefined.ts": { code: 18048, names: ["'steps.double' is possibly 'undefined'"] },
  "race-union.ts": { code: 2339, names: ["'ms'", "{ winner: string; }"] },
  "tap-unchanged.ts": { code: 2339, names: ["'audited'"] },
  "agent-text.ts": { code: 2339, names: ["'answer'", "type 'string'"] },
  "agent-output-field.ts": { code: 2551, names: ["'answr'", "{ readonly answer: string; }"] },
  "agent-map-field.ts": { code: 2551, names: ["'sumary'", "{ ticketId: string; summary: string; }"] },
  "unprovided-service.ts": { code: 2345, names: ["Type 'Tickets' is not assignable to type 'never'"] },
  "unprovided-step-service.ts": { code: 2345, names: ["Type 'Tickets' is not assignable to type 'never'"] },
  "agent-tool-service.ts": { code: 2345, names: ["Type 'Billing' is not assignable to type 'never'"] },
  "agent-step-service.ts": { code: 2345, names: ["Type 'Billing' is not assignable to type 'never'"] },
  "working-memory-schema-service.ts": {
    code: 2322,
    names: ["'AnyNoContext'", "Type 'Names' is not assignable to type 'never'"]
  },
  "registered-by-hand.ts": {
    code: 2322,
    names: ["Type 'Tickets' is not assignable to type 'never'", "WorkflowDefinition<any, any, never>"]
  },
  // The typed WorkflowEngine calls (valid counterparts: test/types/typed-calls.ts).
  "typed-execute-input.ts": { code: 2353, names: ["'nmae'", "{ readonly name: string; }"] },
  "typed-result-field.ts": { code: 2551, names: ["'greting'", "{ readonly greeting: string; }"] },
  "typed-resume-field.ts": { code: 2561, names: ["'aproved'", "{ readonly approved: boolean; }"] }
}

/** The `.ts` files of a fixture folder, as absolute paths. */
export const fixtureFiles = (dir: string): Array<string> =>
  readdirSync(dir).filter((file) => file.endsWith(".ts")).sort().map((file) => join(dir, file))
