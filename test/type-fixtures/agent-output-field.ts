import { Effect, Schema } from "effect"
import { defineAgent } from "../../src/agents/Agent.js"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const assistant = defineAgent({ id: "assistant", name: "Assistant", purpose: "p", instructions: "i" })

// A misspelled field of an agent's structured output (its `output` Schema's type).
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ question: Schema.String }),
      result: Schema.Unknown
    })
      .andAgent({
        id: "ask",
        agent: assistant,
        prompt: ({ data }) => data.question,
        output: Schema.Struct({ answer: Schema.String })
      })
      .andThen({ id: "after", execute: ({ data }) => data.answr.length })
  ]
})
export const unused = Effect.void
