import { Context, Effect, Layer } from "effect"
import { AgentRegistry, AgentRegistryLive, agentToolEntries, RegisteredAgents } from "./agents/AgentRegistry.js"
import { ApprovalStoreLive } from "./agents/approvals/ApprovalStore.js"
import { MemoryStoreLive } from "./agents/memory/MemoryStore.js"
import { DefaultModelLive } from "./agents/models/DefaultModel.js"
import { WorkingMemoryStoreLive } from "./agents/workingMemory/WorkingMemoryStore.js"
import type { ServiceApp } from "./App.js"
import { bindApp } from "./app/bindApp.js"
import { makeUserContext, UserContext } from "./app/UserContext.js"
import { AuthPolicyLive } from "./auth/AuthPolicy.js"
import { ServerConfig, type ServerConfigShape } from "./config/ServerConfig.js"
import { DatabaseLive } from "./Database.js"
import { LifecycleLive } from "./health/Lifecycle.js"
import { ReadinessLive } from "./health/Readiness.js"
import { ShutdownLive } from "./http/Shutdown.js"
import { McpExposureLive } from "./mcp/McpExposure.js"
import { ConsoleLoggingLive } from "./observability/consoleTraceIds.js"
import { LogCaptureLive, LogStoreLive } from "./observability/LogStore.js"
import { ObservabilitySqlLive } from "./observability/ObservabilitySql.js"
import { StoreWriterLive } from "./observability/StoreWriter.js"
import { TraceStoreLive } from "./observability/TraceStore.js"
import { TracingLive } from "./observability/Tracing.js"
import { ObservabilitySetupLive } from "./ops/ObservabilitySetup.js"
import { UpdatesLive } from "./ops/Updates.js"
import { RecordRetentionLive } from "./retention/RecordRetention.js"
import { DueWorkLive } from "./scheduling/DueWork.js"
import { NodePlatformLive, NodeServerLive } from "./server/NodeServer.js"
import { HttpLive } from "./server/Server.js"
import { StoreCommitsLive } from "./storage/StoreCommits.js"
import { RegisteredTools, ToolRunner, ToolRunnerLive } from "./tools/ToolRunner.js"
import { WebhooksLive } from "./webhooks/Webhooks.js"
import { agentsOf } from "./workflows/definition/Workflow.js"
import { RegisteredWorkflows, WorkflowEngine, WorkflowEngineLive } from "./workflows/engine/WorkflowEngine.js"
import { ExecutionStoreLive } from "./workflows/execution/ExecutionStoreLive.js"
import { IdempotencyKeysLive } from "./workflows/execution/IdempotencyKeys.js"
import { WorkflowSchedulesLive } from "./workflows/schedules/Schedules.js"
import { ScheduleStoreLive } from "./workflows/schedules/ScheduleStore.js"

const SERVICE_NAME = "agent-workflow-service"

/**
 * The service's own services that user code may use: provided to it at call time (they are built
 * from the app, so requiring them of the caller would be a cycle).
 */
export type OwnServices = AgentRegistry | WorkflowEngine | ToolRunner

/** What an app's layer requires: what its code requires, but the service's own services. */
export type AppRequirementsOf<R> = Exclude<R, OwnServices>

/**
 * Every service of the app, without the HTTP server: for embedding or for tests. It requires what the
 * app's code requires (`R`, but the service's own services): provide your layers to it.
 */
export const ServicesLive = <R>(app: ServiceApp<R>, config: ServerConfigShape) =>
  OwnServicesForUserCode.pipe(Layer.provideMerge(servicesFor(app, config)))

const servicesFor = <R>(app: ServiceApp<R>, config: ServerConfigShape) =>
  Layer.mergeAll(
    McpExposureLive,
    WorkflowEngineLive,
    IdempotencyKeysLive,
    WorkflowSchedulesLive,
    WebhooksLive,
    ReadinessLive
  ).pipe(
    Layer.provideMerge(Layer.mergeAll(
      ToolRunnerLive,
      AgentRegistryLive,
      ShutdownLive,
      LifecycleLive,
      AuthPolicyLive,
      UpdatesLive(),
      ObservabilitySetupLive()
    )),
    Layer.provideMerge(Layer.mergeAll(
      MemoryStoreLive,
      WorkingMemoryStoreLive,
      ApprovalStoreLive,
      ExecutionStoreLive,
      ScheduleStoreLive,
      DueWorkLive,
      DefaultModelLive(config.model),
      RecordRetentionLive(config.recordRetention)
    )),
    // Tracing and log capture come first, so everything built after them is traced and logged.
    Layer.provideMerge(Layer.mergeAll(
      TracingLive({
        serviceName: SERVICE_NAME,
        instanceId: config.instanceId,
        otlpEndpoint: config.otlpEndpoint,
        metricExportIntervalMs: config.metricExportIntervalMs
      }),
      LogCaptureLive
    )),
    Layer.provideMerge(Layer.mergeAll(
      TraceStoreLive(config.retention, config.instanceId),
      LogStoreLive({ instanceId: config.instanceId, retention: config.logRetention })
    )),
    Layer.provideMerge(Layer.mergeAll(StoreWriterLive(config.databaseUrl), StoreCommitsLive(config.databaseUrl))),
    Layer.provideMerge(ObservabilitySqlLive(config.databaseUrl)),
    Layer.provideMerge(DatabaseLive(config.databaseUrl)),
    Layer.provideMerge(Layer.mergeAll(Layer.succeed(ServerConfig, config), AppLive(app))),
    // LOG_FORMAT and LOG_LEVEL, before anything logs.
    Layer.provideMerge(ConsoleLoggingLive({ format: config.logFormat, level: config.logLevel }))
  )

/**
 * The app's definitions, as the registries read them, bound to the context this layer is built with
 * (what their code requires); two different ones under one id fail here (an agent a workflow's
 * andAgent calls included).
 */
const AppLive = <R>(app: ServiceApp<R>) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const userContext = makeUserContext(yield* Effect.context<AppRequirementsOf<R>>())
    const bound = bindApp(app, userContext.provide)
    // The agents its workflows' andAgent steps call are registered beside its own, as sub-agents are.
    const agents = [...bound.agents, ...bound.workflows.flatMap(agentsOf)]
    return Layer.mergeAll(
      Layer.succeed(UserContext, userContext),
      Layer.succeed(RegisteredAgents, agents),
      Layer.succeed(RegisteredWorkflows, bound.workflows),
      Layer.effect(
        RegisteredTools,
        Effect.map(
          agentToolEntries(agents),
          (owned) => [...owned, ...bound.tools.map((tool) => ({ tool, agents: [] }))]
        )
      )
    )
  }))

/** Hands the service's own services to user code once they are built. */
const OwnServicesForUserCode = Layer.effectDiscard(Effect.gen(function*() {
  const own = yield* Effect.context<OwnServices>()
  const userContext = yield* UserContext
  userContext.ownServicesBuilt(Context.pick(AgentRegistry, WorkflowEngine, ToolRunner)(own))
}))

/**
 * The HTTP service over the given services, listening on config.host:config.port (0 picks a free
 * port; read it from the HttpServer this layer provides). `Layer.launch` it to run until interrupted.
 */
export const serveWith = <E, R>(
  config: ServerConfigShape,
  services: Layer.Layer<Layer.Layer.Success<ReturnType<typeof servicesFor>>, E, R>
) =>
  HttpLive(config, NodeServerLive(config)).pipe(
    Layer.provide(services),
    Layer.provide(NodePlatformLive),
    Layer.provide(ConsoleLoggingLive({ format: config.logFormat, level: config.logLevel }))
  )

/** The whole service for an app: its services and the HTTP server. It requires what the app's code requires (see ServicesLive). */
export const ServiceLive = <R>(app: ServiceApp<R>, config: ServerConfigShape) =>
  serveWith(config, ServicesLive(app, config))
