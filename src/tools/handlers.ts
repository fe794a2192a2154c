import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../auth/Authentication.js"
import { ServiceApi } from "../Api.js"
import { ToolRunner } from "./ToolRunner.js"

export const ToolsHandlers = HttpApiBuilder.group(ServiceApi, "tools", (handlers) =>
  Effect.gen(function*() {
    const runner = yield* ToolRunner
    return handlers
      .handle("listTools", () =>
        Effect.map(runner.list, (entries) =>
          entries.map(({ agents, tool }) => ({
            name: tool.name,
            description: tool.description,
            tags: tool.tags,
            parameters: tool.parameters,
            status: "ready" as const,
            agents
          }))
        ))
      .handle("executeTool", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => runner.execute(path.name, payload.input, { context: payload.context ?? {}, user })))
  }))
