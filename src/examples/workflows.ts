import { Effect, Schema } from "effect"
import { workflow } from "../workflows/definition/Workflow.js"
import { assistant } from "./agents.js"

/** Amounts over 100 wait for a manager. */
export const approval = workflow({
  id: "approval",
  name: "Approval",
  purpose: "Approve an expense, asking a manager when the amount is over 100",
  // Examples are what the API explorer pre-fills for this workflow.
  input: Schema.Struct({ amount: Schema.Number }).annotations({ examples: [{ amount: 250 }, { amount: 40 }] }),
  result: Schema.Struct({ approved: Schema.Boolean, amount: Schema.Number })
})
  .andThen({
    id: "check",
    purpose: "Decide whether a manager must approve",
    execute: ({ data }) => ({ amount: data.amount, needsApproval: data.amount > 100 })
  })
  .andThen({
    id: "manager-approval",
    purpose: "Wait for the manager's decision when needed",
    resumeSchema: Schema.Struct({ approved: Schema.Boolean }).annotations({ examples: [{ approved: true }] }),
    execute: ({ data, resumeData, suspend }) => {
      if (!data.needsApproval) return { approved: true, amount: data.amount }
      if (resumeData === undefined) return suspend("manager approval required")
      return { approved: resumeData.approved, amount: data.amount }
    }
  })

/** Every step type but andAgent and andWorkflow, in one run. */
export const pipeline = workflow({
  id: "pipeline",
  name: "Pipeline",
  purpose: "Normalise text, measure it in parallel, double n when large, race two finishers",
  input: Schema.Struct({ text: Schema.String, n: Schema.Number }).annotations({
    examples: [{ text: "  hello  ", n: 21 }]
  }),
  result: Schema.Struct({
    text: Schema.String,
    upper: Schema.String,
    length: Schema.Number,
    doubled: Schema.Number,
    winner: Schema.String
  })
})
  .andThen({ id: "normalize", execute: ({ data }) => ({ text: data.text.trim(), n: data.n }) })
  .andAll({
    id: "measure",
    steps: [
      { id: "upper", execute: ({ data }) => data.text.toUpperCase() },
      { id: "length", execute: ({ data }) => data.text.length }
    ]
  })
  .andThen({
    id: "merge",
    execute: ({ data, steps }) => {
      const { n, text } = steps.normalize
      const [upper, length] = data
      return { text, upper, length, doubled: n, n }
    }
  })
  .andWhen({
    id: "double-if-large",
    condition: ({ data }) => data.n > 10,
    step: { id: "double", execute: ({ data }) => ({ ...data, doubled: data.n * 2 }) }
  })
  .andTap({ id: "audit", execute: ({ data }) => Effect.logInfo(`pipeline audit: ${JSON.stringify(data)}`) })
  .andRace({
    id: "finishers",
    steps: [
      { id: "fast", execute: ({ data }) => ({ ...data, winner: "fast" }) },
      { id: "slow", execute: ({ data }) => Effect.as(Effect.sleep("10 millis"), { ...data, winner: "slow" }) }
    ]
  })
  .andThen({
    id: "finish",
    execute: ({ data }) => ({
      text: data.text,
      upper: data.upper,
      length: data.length,
      doubled: data.doubled,
      winner: data.winner
    })
  })

/** Waits `ms` milliseconds (interruptibly). */
export const slow = workflow({
  id: "slow",
  name: "Slow",
  purpose: "Wait for the given number of milliseconds",
  input: Schema.Struct({ ms: Schema.Number.pipe(Schema.nonNegative()) }).annotations({ examples: [{ ms: 500 }] }),
  result: Schema.Struct({ waitedMs: Schema.Number })
})
  .andThen({ id: "wait", execute: ({ data }) => Effect.as(Effect.sleep(data.ms), { waitedMs: data.ms }) })

/** An item a customer message names. */
export class OrderLine extends Schema.Class<OrderLine>("OrderLine")({ item: Schema.String, quantity: Schema.Number }) {}

/** What the assistant answers when it sorts a message (the model is asked for its JSON Schema). */
export const Triage = Schema.Struct({
  category: Schema.Literal("billing", "delivery", "other"),
  urgent: Schema.Boolean,
  note: Schema.optional(Schema.String),
  lines: Schema.Array(OrderLine)
})

/** Asks the assistant to sort a customer message: its answer decoded with `Triage`, merged with the input by `map`. */
export const triage = workflow({
  id: "triage",
  name: "Triage",
  purpose: "Ask the assistant to sort a customer message",
  input: Schema.Struct({ message: Schema.String }).annotations({ examples: [{ message: "Two mugs arrived broken" }] }),
  result: Schema.Struct({
    message: Schema.String,
    category: Schema.String,
    urgent: Schema.Boolean,
    items: Schema.Number
  })
})
  .andAgent({
    id: "sort",
    agent: assistant,
    prompt: ({ data }) => `Sort this customer message: ${data.message}`,
    output: Triage,
    map: (answer, { input }) => ({
      message: input.message,
      category: answer.category,
      urgent: answer.urgent,
      items: answer.lines.reduce((sum, line) => sum + line.quantity, 0)
    })
  })
