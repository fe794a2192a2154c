import { Effect, Schema } from "effect"
import { defineAgent } from "../../src/agents/Agent.js"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const assistant = defineAgent({ id: "assistant", name: "Assistant", purpose: "p", instructions: "i" })

// andAgent without output gives the agent's text: a string.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andAgent({ id: "ask", agent: assistant, prompt: ({ data }) => `about ${data.name}` })
      .andThen({ id: "after", execute: ({ data }) => data.answer })
  ]
})
export const unused = Effect.void
