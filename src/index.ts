/**
 * Embedding surface: define tools and an app, configure, and run the service's layers inside your own
 * Effect program (see README "Embedding").
 */
export {
  type AgentCallContext,
  type AgentDefinition,
  type AgentEndEvent,
  type AgentErrorEvent,
  type AgentHook,
  type AgentHookEvent,
  type AgentRequirements,
  type AgentStartEvent,
  type AgentToolEndEvent,
  type AgentToolStartEvent,
  defineAgent,
  type Dynamic
} from "./agents/Agent.js"
export { AgentOutputInvalid, type JsonSchemaInput, type OutputSchema } from "./agents/AgentOutput.js"
export { AgentRegistry, type CallRequestWith, RegisteredAgents } from "./agents/AgentRegistry.js"
export {
  blocklist,
  Guardrail,
  type GuardrailDecision,
  type InputGuardrail,
  type InputGuardrailArgs,
  type InputRole,
  maxInputLength,
  type OutputGuardrail,
  type OutputGuardrailArgs,
  regexRedactor
} from "./agents/guardrails/Guardrail.js"
export { normalizeForMatching } from "./agents/guardrails/normalize.js"
export { builtinEchoModel } from "./agents/models/BuiltinEchoModel.js"
export { type FallbackPolicy, FirstTokenTimeout, type ModelRef } from "./agents/models/fallbackModel.js"
export { ServiceApi } from "./Api.js"
export { type AppParts, type AppRequirements, defineApp, type ServiceApp } from "./App.js"
export { AuthPolicy } from "./auth/AuthPolicy.js"
export { InvalidJwtKey } from "./auth/Jwt.js"
export { loadConfig } from "./cli.js"
export {
  ConfigFile,
  DEFAULT_BODY_LIMIT,
  DEFAULT_PORT,
  resolveServerConfig,
  ServerConfig,
  type ServerConfigShape
} from "./config/ServerConfig.js"
export { StartupError } from "./config/StartupError.js"
export { DuplicateDefinition } from "./core/definitionId.js"
export { ErrorDetail } from "./core/errorDetail.js"
export * as Errors from "./core/errors.js"
export { DatabaseLive, serviceMigrations, ServiceMigrationsLive } from "./Database.js"
export { LogStore } from "./observability/LogStore.js"
export { TraceStore } from "./observability/TraceStore.js"
export { ObservabilitySetup, ObservabilitySetupLive } from "./ops/ObservabilitySetup.js"
export { Updates, UpdatesLive } from "./ops/Updates.js"
export * as RpcContract from "./rpc/RpcContract.js"
export { type DueKind, DueWork, DueWorkLive, type DueWorkService } from "./scheduling/DueWork.js"
export { HttpLive } from "./server/Server.js"
export { type AppRequirementsOf, type OwnServices, serveWith, ServiceLive, ServicesLive } from "./Service.js"
export { type Migration, Migrations } from "./storage/Migrations.js"
export { DEFAULT_DATABASE_URL, SqlLive, StorageError } from "./storage/Sql.js"
export { defineTool, type Tool, type ToolContext, type ToolErrorClass } from "./tools/Tool.js"
export { RegisteredTools, type ToolEntry, type ToolExecution, ToolRunner, ToolRunnerLive } from "./tools/ToolRunner.js"
export {
  type LastDataDoesNotFitResult,
  type SchemaOf,
  type StepContext,
  workflow,
  type WorkflowBuilder,
  type WorkflowDefinition
} from "./workflows/definition/Workflow.js"
export type { LoopsChain, SleepChain } from "./workflows/definition/WorkflowChain.js"
export {
  type ResumeData,
  type ResumeStepId,
  type ResumeWorkflowRequest,
  type WorkflowCallOptions,
  type WorkflowCancelled,
  type WorkflowCompleted,
  type WorkflowInput,
  WorkflowNotRegistered,
  type WorkflowOutcome,
  type WorkflowResult,
  type WorkflowSuspended
} from "./workflows/engine/TypedCalls.js"
export { RegisteredWorkflows, WorkflowEngine, type WorkflowEngineService } from "./workflows/engine/WorkflowEngine.js"
export type { StartOptions, WorkflowEngineCore } from "./workflows/engine/WorkflowEngineContract.js"
export type { ApprovalAnswers } from "./workflows/steps/agentApprovals.js"
export {
  type OnErrorEvent,
  type OnFinishEvent,
  type OnStartEvent,
  type OnSuspendEvent
} from "./workflows/steps/Hooks.js"
export type { ItemContext, ItemStepContext, IterationContext } from "./workflows/steps/Loops.js"
export { type StepPolicy, type StepRetry, StepTimeout } from "./workflows/steps/Policy.js"
export { MAX_SLEEP } from "./workflows/steps/Sleep.js"
