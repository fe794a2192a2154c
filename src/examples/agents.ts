import { defineAgent } from "../agents/Agent.js"
import { add, getWeather } from "./tools.js"

export const assistant = defineAgent({
  id: "assistant",
  name: "Assistant",
  purpose: "A helpful general assistant that can look up the weather and add numbers",
  instructions: "You are a helpful assistant. Use the get_weather tool for weather questions and the add tool " +
    "for sums. Answer briefly.",
  tools: [getWeather, add],
  memory: true,
  defaults: { maxSteps: 5 }
})
