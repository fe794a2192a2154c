import { defineApp } from "../App.js"
import { add, getWeather } from "./tools.js"

/** The app `node dist/main.js` serves by default. */
export const exampleApp = defineApp({
  tools: [getWeather, add]
})
