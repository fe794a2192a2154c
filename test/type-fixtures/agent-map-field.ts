import { Effect, Schema } from "effect"
import { defineAgent } from "../../src/agents/Agent.js"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const assistant = defineAgent({ id: "assistant", name: "Assistant", purpose: "p", instructions: "i" })

// A misspelled field of what andAgent's `map` returns (an Effect here), read by the next step.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ ticketId: Schema.String }),
      result: Schema.Unknown
    })
      .andAgent({
        id: "ask",
        agent: assistant,
        prompt: ({ data }) => `summarise ${data.ticketId}`,
        output: Schema.Struct({ answer: Schema.String }),
        map: (out, { input }) => Effect.succeed({ ticketId: input.ticketId, summary: out.answer })
      })
      .andThen({ id: "after", execute: ({ data }) => data.sumary.length })
  ]
})
export const unused = Effect.void
