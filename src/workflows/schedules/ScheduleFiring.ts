import { Cron, Effect, Either, Metric, Option, Schema } from "effect"
import { SYSTEM_USER_PREFIX } from "../../auth/Ownership.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { defaultWebhookSettings } from "../../config/WebhookSettings.js"
import { scheduleFireLag, scheduleFires } from "../../observability/metrics/instruments.js"
import type { DueWorkService } from "../../scheduling/DueWork.js"
import { checkWebhookUrl } from "../../webhooks/WebhookUrls.js"
import type { ConcurrencyGate } from "../concurrency/ConcurrencyGate.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"
import { definitionHash } from "../execution/DefinitionCompatibility.js"
import { type ExecutionDriver, openingEvents } from "../execution/ExecutionDriver.js"
import type { Execution } from "../execution/ExecutionRows.js"
import { decodeWorkflowInput } from "../steps/runner.js"
import { codeScheduleId, codeSchedulesOf, SYSTEM_OWNER } from "./codeSchedules.js"
import { firing, nextFire, parseCron } from "./ScheduleCron.js"
import { type Fired, type Schedule, scheduleStoreOrOwn } from "./ScheduleStore.js"

/** The due-work kind of schedule firings (issue #33). */
export const SCHEDULE_FIRE_KIND = "schedule-fire"

/** The user a code schedule's executions belong to: only administrators see them. */
export const systemUserOf = (scheduleId: string) => `${SYSTEM_USER_PREFIX}schedule/${scheduleId}`

/** A fired execution's id: one per schedule and fire time, whichever instance fires it. */
export const firedExecutionId = (scheduleId: string, fireAt: string) => `sched:${scheduleId}:${fireAt}`

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Writes the app's code schedules (upserted by (workflow, name): a changed cron or time zone moves the
 * due time, an unchanged one keeps it), then registers the firing kind: each due schedule fires in one
 * transaction (its conditional UPDATE and its execution's INSERT), and the execution is launched here;
 * an instance that dies before launching it leaves a running execution its orphan claim takes.
 */
export const startScheduleFiring = (options: {
  readonly driver: ExecutionDriver
  readonly workflows: ReadonlyMap<string, WorkflowDefinition>
  readonly leaving: Effect.Effect<boolean>
  readonly dueWork: DueWorkService
  readonly instanceId: string
  readonly minIntervalMs: number
  /** A limited workflow's firings are keyed, stored queued and admitted like starts (issue #33, concurrency/). */
  readonly gate?: ConcurrencyGate | undefined
}) =>
  Effect.gen(function*() {
    const store = yield* scheduleStoreOrOwn
    const webhooks = Option.match(yield* Effect.serviceOption(ServerConfig), {
      onNone: () => undefined,
      onSome: (c) => c.webhooks
    }) ?? defaultWebhookSettings
    const { driver, workflows } = options
    const codeIds: Array<string> = []
    const createdAt = iso(Date.now())
    for (const definition of workflows.values()) {
      for (const code of codeSchedulesOf(definition)) {
        const id = codeScheduleId(definition.id, code.name)
        const cron = parseCron(code.cron, code.timezone, options.minIntervalMs)
        if (Either.isLeft(cron)) {
          return yield* Effect.dieMessage(`Workflow ${definition.id}'s schedule ${code.name}: ${cron.left}`)
        }
        const input = Schema.encodeUnknownEither(definition.input as Schema.Schema<unknown>)(code.input)
        if (Either.isLeft(input)) {
          return yield* Effect.dieMessage(
            `Workflow ${definition.id}'s schedule ${code.name}: its input does not fit the workflow's input: ${input.left.message}`
          )
        }
        if (code.webhook !== undefined) {
          const checked = checkWebhookUrl(code.webhook.url, webhooks)
          if ("problem" in checked) {
            return yield* Effect.dieMessage(`Workflow ${definition.id}'s schedule ${code.name}: ${checked.problem}`)
          }
          if (webhooks.systemSecret === undefined) {
            return yield* Effect.dieMessage(
              `Workflow ${definition.id}'s schedule ${code.name} has a webhook: set WEBHOOK_SYSTEM_SECRET (webhooks.systemSecret) to sign it`
            )
          }
        }
        codeIds.push(id)
        yield* store.upsertCode({
          id,
          workflowId: definition.id,
          name: code.name,
          source: "code",
          ownerKey: SYSTEM_OWNER,
          userId: systemUserOf(id),
          cron: code.cron,
          timezone: code.timezone ?? null,
          input: input.right,
          catchUp: code.catchUp,
          paused: false,
          nextFireAt: iso(nextFire(cron.right, Date.now())),
          lastFiredAt: null,
          lastExecutionId: null,
          failures: 0,
          lastError: null,
          createdAt,
          updatedAt: createdAt,
          ...(code.webhook === undefined ? {} : { webhookUrl: code.webhook.url })
        })
      }
    }
    const fired: Fired = { workflowIds: [...workflows.keys()], codeIds }

    const claimDue = (limit: number) =>
      Effect.flatMap(
        options.leaving,
        (leaving) => leaving || driver.isDraining() ? Effect.succeed([]) : store.due(fired, iso(Date.now()), limit)
      )

    /** The schedule fired at its due time, or its due time moved on (a missed time, a failure). */
    const fire = (schedule: Schedule) =>
      Effect.gen(function*() {
        const due = Date.parse(schedule.nextFireAt)
        const cron = Cron.parse(schedule.cron, schedule.timezone ?? undefined)
        const definition = workflows.get(schedule.workflowId)
        if (Either.isLeft(cron) || definition === undefined) return
        const now = Date.now()
        const { fire: at, next } = firing(cron.right, schedule.catchUp, due, now)
        const move = { id: schedule.id, due: schedule.nextFireAt, next: iso(next) }
        if (at === undefined) {
          if (yield* store.skip(move)) {
            yield* Effect.logInfo(
              `schedule ${schedule.name}: the time ${schedule.nextFireAt} was missed (catchUp none)`
            )
          }
          return
        }
        const input = decodeWorkflowInput(definition, schedule.input)
        if (Either.isLeft(input)) {
          const message = `input at ${iso(at)}: ${input.left.message}`
          if (yield* store.skip(move, message)) {
            yield* Effect.logWarning(`schedule ${schedule.name} failed to fire: ${message}`)
          }
          return
        }
        const span = yield* Effect.currentSpan.pipe(Effect.option)
        const createdAt = iso(Date.now())
        const execution: Execution = {
          id: firedExecutionId(schedule.id, iso(at)),
          workflowId: definition.id,
          workflowName: definition.name,
          status: "running",
          input: input.right,
          context: { schedule: { id: schedule.id, name: schedule.name, fireAt: iso(at) } },
          user: null,
          userId: schedule.userId ?? undefined,
          stepIndex: 0,
          stepData: {},
          currentData: input.right,
          metadata: Option.match(span, {
            onNone: () => ({ traceId: "", spanId: "" }),
            onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId })
          }),
          version: 0,
          owner: options.instanceId,
          lastSeq: 0,
          definitionHash: definitionHash(definition),
          createdAt,
          updatedAt: createdAt,
          ...(schedule.webhookUrl === undefined ? {} : { webhookUrl: schedule.webhookUrl })
        }
        yield* Effect.annotateCurrentSpan({
          "schedule.id": schedule.id,
          "schedule.fire_at": iso(at),
          "execution.id": execution.id
        })
        const gate = options.gate
        const keyed = gate === undefined
          ? Either.right(execution)
          : yield* Effect.either(gate.keyed(definition, execution))
        if (Either.isLeft(keyed)) {
          // A bad key is the schedule's failure; a full key under onBusy 'reject' skips the time.
          const message = keyed.left._tag === "BadRequest" ? `at ${iso(at)}: ${keyed.left.message}` : undefined
          if (yield* store.skip(move, message)) {
            yield* Effect.logWarning(`schedule ${schedule.name} did not fire at ${iso(at)}: ${keyed.left.message}`)
          }
          return
        }
        const stored = yield* store.fire({ ...move, at: iso(at) }, keyed.right, openingEvents(definition, keyed.right))
        if (Option.isNone(stored)) return
        yield* Metric.increment(scheduleFires)
        yield* Metric.update(scheduleFireLag, Math.max(0, Date.now() - at))
        yield* Effect.logInfo("workflow started by its schedule").pipe(
          Effect.annotateLogs({ workflowId: definition.id, executionId: execution.id, scheduleId: schedule.id })
        )
        const key = keyed.right.concurrencyKey
        if (gate !== undefined && key !== undefined) {
          yield* Effect.catchTag(
            gate.started(definition, keyed.right, key),
            "Conflict",
            (busy) => Effect.logWarning(`schedule ${schedule.name}: ${busy.message}`)
          )
          return
        }
        yield* driver.launch(definition, execution, { startRecorded: true })
      }).pipe(
        Effect.withSpan("schedule.fire", {
          root: true,
          captureStackTrace: false,
          attributes: { "entity.type": "workflow", "entity.id": schedule.workflowId }
        })
      )

    yield* options.dueWork.register<Schedule>({
      name: SCHEDULE_FIRE_KIND,
      nextDue: store.nextDue(fired),
      claimDue,
      handle: fire
    })
  })
