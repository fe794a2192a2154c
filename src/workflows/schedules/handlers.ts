import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../../Api.js"
import { CurrentCaller } from "../../auth/Authentication.js"
import { pageOf } from "../../http/Query.js"
import { Webhooks } from "../../webhooks/Webhooks.js"
import { WorkflowSchedules } from "./Schedules.js"

export const SchedulesHandlers = HttpApiBuilder.group(ServiceApi, "schedules", (handlers) =>
  Effect.gen(function*() {
    const schedules = yield* WorkflowSchedules
    const webhooks = yield* Webhooks
    const visibility = Effect.map(CurrentCaller, (caller) => caller.visibility)
    return handlers
      .handle("listAllSchedules", ({ urlParams }) =>
        Effect.flatMap(visibility, (seen) => schedules.list(undefined, seen, pageOf(urlParams))))
      .handle("listSchedules", ({ path, urlParams }) =>
        Effect.flatMap(visibility, (seen) =>
          schedules.list(path.id, seen, pageOf(urlParams))))
      .handle("createSchedule", ({ path, payload }) =>
        Effect.flatMap(CurrentCaller, (caller) =>
          Effect.zipRight(
            payload.webhook === undefined ? Effect.void : webhooks.checkStart(payload.webhook.url, caller),
            schedules.create(path.id, payload, caller)
          )))
      .handle("getSchedule", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          schedules.get(path.id, path.scheduleId, seen)))
      .handle("deleteSchedule", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          schedules.remove(path.id, path.scheduleId, seen)))
      .handle("pauseSchedule", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          schedules.pause(path.id, path.scheduleId, seen)))
      .handle("resumeSchedule", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          schedules.resume(path.id, path.scheduleId, seen)))
  }))
