import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A misspelled field of the resume data its resumeSchema declares.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    }).andThen({
      id: "approve",
      resumeSchema: Schema.Struct({ approved: Schema.Boolean }),
      execute: ({ resumeData, suspend }) => (resumeData === undefined ? suspend("ask") : resumeData.aproved)
    })
  ]
})
export const unused = Effect.void
