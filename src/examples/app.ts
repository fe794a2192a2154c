import { defineApp } from "../App.js"
import { assistant } from "./agents.js"
import { batch, onboarding } from "./durable.js"
import { reminder } from "./reminder.js"
import { whoami } from "./tools.js"
import { approval, pipeline, slow } from "./workflows.js"

/** The app `node dist/main.js` serves by default; its model comes from the environment (builtin by default). */
export const exampleApp = defineApp({
  agents: [assistant],
  tools: [whoami],
  workflows: [approval, pipeline, slow, reminder, onboarding, batch]
})
