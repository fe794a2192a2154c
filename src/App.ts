import type { Tool } from "./tools/Tool.js"

/** What a deployment serves: its tools (agents and workflows join in later issues). */
export interface ServiceApp {
  readonly tools: ReadonlyArray<Tool>
}

export const defineApp = (app: Partial<ServiceApp>): ServiceApp => ({
  tools: app.tools ?? []
})
