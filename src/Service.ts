import { Effect, Layer } from "effect"
import { agentToolEntries, AgentRegistryLive, RegisteredAgents } from "./agents/AgentRegistry.js"
import { MemoryStoreLive } from "./agents/memory/MemoryStore.js"
import { DefaultModelLive } from "./agents/models/DefaultModel.js"
import type { ServiceApp } from "./App.js"
import { AuthPolicyLive } from "./auth/AuthPolicy.js"
import { DatabaseLive } from "./Database.js"
import { ServerConfig, type ServerConfigShape } from "./config/ServerConfig.js"
import { NodePlatformLive, NodeServerLive } from "./server/NodeServer.js"
import { HttpLive } from "./server/Server.js"
import { ShutdownLive } from "./http/Shutdown.js"
import { LifecycleLive } from "./health/Lifecycle.js"
import { ReadinessLive } from "./health/Readiness.js"
import { McpExposureLive } from "./mcp/McpExposure.js"
import { ObservabilitySetupLive } from "./ops/ObservabilitySetup.js"
import { UpdatesLive } from "./ops/Updates.js"
import { LogCaptureLive, LogStoreLive } from "./observability/LogStore.js"
import { ObservabilitySqlLive } from "./observability/ObservabilitySql.js"
import { StoreWriterLive } from "./observability/StoreWriter.js"
import { TraceStoreLive } from "./observability/TraceStore.js"
import { TracingLive } from "./observability/Tracing.js"
import { ConsoleLoggingLive } from "./observability/consoleTraceIds.js"
import { RecordRetentionLive } from "./retention/RecordRetention.js"
import { StoreCommitsLive } from "./storage/StoreCommits.js"
import { RegisteredTools, ToolRunnerLive } from "./tools/ToolRunner.js"
import { ExecutionStoreLive } from "./workflows/ExecutionStore.js"
import { IdempotencyKeysLive } from "./workflows/IdempotencyKeys.js"
import { agentsOf } from "./workflows/Workflow.js"
import { RegisteredWorkflows, WorkflowEngineLive } from "./workflows/WorkflowEngine.js"

const SERVICE_NAME = "agent-workflow-service"

/** Every service of the app, without the HTTP server: for embedding or for tests. */
export const ServicesLive = (app: ServiceApp, config: ServerConfigShape) =>
  Layer.mergeAll(McpExposureLive, WorkflowEngineLive, IdempotencyKeysLive, ReadinessLive).pipe(
    Layer.provideMerge(Layer.mergeAll(
      ToolRunnerLive,
      AgentRegistryLive,
      ShutdownLive,
      LifecycleLive,
      AuthPolicyLive,
      UpdatesLive(),
      ObservabilitySetupLive()
    )),
    Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, ExecutionStoreLive, DefaultModelLive(config.model), RecordRetentionLive(config.recordRetention))),
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
 * The app's definitions, as the registries read them; two different ones under one id fail here. The
 * agents its workflows' andAgent steps call are registered beside its own (as sub-agents are).
 */
const AppLive = (app: ServiceApp) => {
  const agents = [...app.agents, ...app.workflows.flatMap(agentsOf)]
  return Layer.mergeAll(
    Layer.succeed(RegisteredAgents, agents),
    Layer.succeed(RegisteredWorkflows, app.workflows),
    Layer.effect(
      RegisteredTools,
      Effect.map(agentToolEntries(agents), (owned) => [...owned, ...app.tools.map((tool) => ({ tool, agents: [] }))])
    )
  )
}

/**
 * The HTTP service over the given services, listening on config.host:config.port (0 picks a free
 * port; read it from the HttpServer this layer provides). `Layer.launch` it to run until interrupted.
 */
export const serveWith = <E>(config: ServerConfigShape, services: Layer.Layer<Layer.Layer.Success<ReturnType<typeof ServicesLive>>, E>) =>
  HttpLive(config, NodeServerLive(config)).pipe(
    Layer.provide(services),
    Layer.provide(NodePlatformLive),
    Layer.provide(ConsoleLoggingLive({ format: config.logFormat, level: config.logLevel }))
  )

/** The whole service for an app: its services and the HTTP server. */
export const ServiceLive = (app: ServiceApp, config: ServerConfigShape) => serveWith(config, ServicesLive(app, config))
