import { Schema } from "effect"
import { defineTool } from "../tools/Tool.js"

export const getWeather = defineTool({
  name: "get_weather",
  description: "Current weather for a location",
  tags: ["weather"],
  parameters: Schema.Struct({
    location: Schema.String.annotations({ description: "City or place name" })
  }).annotations({ examples: [{ location: "Paris" }] }),
  execute: ({ location }) => ({ location, temperatureC: 21, condition: "sunny" })
})

export const add = defineTool({
  name: "add",
  description: "Add two numbers",
  tags: ["math"],
  parameters: Schema.Struct({
    a: Schema.Number,
    b: Schema.Number
  }).annotations({ examples: [{ a: 2, b: 3 }] }),
  execute: ({ a, b }) => ({ sum: a + b })
})

/** Shows from outside how the caller's context and the authenticated user reach a tool. */
export const whoami = defineTool({
  name: "whoami",
  description: "Who is calling, and with what context",
  tags: ["diagnostics"],
  parameters: Schema.Struct({}),
  execute: (_input, { context, user }) => ({ user: user ?? null, context })
})
