import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { CurrentUser } from "../auth/Authentication.js"
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
          }))))
      .handle("executeTool", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          runner.execute(path.name, payload.input, { context: payload.context ?? {}, user })).pipe(
            // An error the tool declared: the envelope with its detail, at the status its class is annotated with.
            Effect.catchTag("DeclaredToolError", (error) =>
              Effect.succeed(HttpServerResponse.unsafeJson(
                { success: false, error: error.message, errorDetail: error.errorDetail },
                { status: error.status }
              )))
          ))
  }))
