import { Effect, Either, ParseResult, Schema } from "effect"
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { ConfigFile, resolveServerConfig, type ServerConfigShape } from "./config/ServerConfig.js"
import { StartupError } from "./config/StartupError.js"
import { messageOf } from "./core/errors.js"

const usage = "usage: node dist/main.js [--port N] [--host H] [--config file.json] [--help]"

/** What `--help` prints: every flag, and the environment variables that change what the service does. */
export const helpText = `${usage}

Serves agents, durable workflows and tools over HTTP: OpenAPI 3.1 at /doc, Swagger UI at /ui.

Options:
  --port N             port to listen on (default 3141; 0 picks a free one; PORT is never read)
  --host H             address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --config FILE        JSON config file: port, host, bodyLimit, enableSwaggerUI, cors, storage.url, auth,
                       instanceId, observability, retention, agents, workflows, http, publicUrl,
                       schedules, webhooks
                       (unknown fields exit 2);
                       flags win over the file, the environment over both
  -h, --help           print this and exit

Environment (every variable, commented, in .env.example; load a file with node --env-file=.env):
  DATABASE_URL         file:path.db (SQLite, default file:./.data/service.db) or postgres://user@host:5432/db
  AI_PROVIDER          builtin (default: deterministic, offline), openai, anthropic, openai-compatible
  AI_MODEL             the model id (defaults: echo, gpt-4o-mini, claude-3-5-haiku-latest)
  AI_BASE_URL          the provider's URL (openai-compatible: required, e.g. http://localhost:11434/v1)
  AI_API_KEY           the provider's key (or OPENAI_API_KEY, ANTHROPIC_API_KEY)
  PROVIDER_OPTIONS_ALLOW  provider.key list callers may set in options.providerOptions (default none)
  APPROVAL_TTL         seconds a tool approval request waits for its answer (default 86400)
  APPROVAL_SECRET      signs tool approval requests (the AI SDK's experimental_toolApprovalSecret)
  AGENT_INPUT_MAX_BYTES  an agent call's input (or chat messages) as JSON at most (default 1048576); past it a 400
  AGENT_CONTEXT_MAX_BYTES  conversation memory one call loads at most (default 2097152): the newest messages that fit
  JWT_SECRET           turns JWT authentication on: a shared secret or a PEM public key
  JWT_ALLOW_NO_EXP     true: accept tokens without exp (default false: 401)
  NODE_ENV             production: Swagger UI off unless configured, console routes need a key
  SERVICE_CONSOLE_ACCESS_KEY  the x-console-access-key console routes need in production or off loopback
  LOG_LEVEL            trace, debug, info (default), warn, error, none
  LOG_FORMAT           pretty, logfmt, json (default: pretty on a terminal, else logfmt)
  OTEL_EXPORTER_OTLP_ENDPOINT  also export spans, metrics and logs over OTLP/HTTP to this URL
  OTEL_METRIC_EXPORT_INTERVAL  milliseconds between OTLP metric exports (default 60000)
  OBSERVABILITY_RECORD_CONTENT  true: model spans keep prompts and completions (default false)
  TRACE_CONSOLE_READS  true: also trace the console's and explorer's own reads (default false)
  SERVICE_INSTANCE_ID  this instance's name among several on one Postgres (default host-pid-random)
  HTTP_HEADERS_TIMEOUT_SECONDS (10), HTTP_REQUEST_TIMEOUT_SECONDS (60)  time to send headers, whole request (else 408)
  HTTP_MAX_CONNECTIONS_PER_CLIENT  open connections per remote address, loopback not counted (256; 0: none)
  SERVICE_PUBLIC_URL   the service's public http(s) URL, for the A2A card (default: the listening address)
  WORKFLOW_LEASE_SECONDS (15), WORKFLOW_POLL_MS (1000), SHUTDOWN_GRACE_SECONDS (10),
  IDEMPOTENCY_KEY_HOURS (24)  workflow ownership, drain on shutdown, Idempotency-Key memory
  WORKFLOW_MAX_QUEUED_PER_KEY  executions one caller may have queued on a concurrency key (1000; past it 429)
  WORKFLOW_MAX_EXECUTION_BYTES  what one workflow execution may store: events, step outputs, values (33554432)
  EXECUTE_WAIT_SECONDS  how long /execute holds an execution that parks before 202 with its state (30)
  WORKFLOW_RECORD_READS_PER_OWNER (4)  whole execution records sent at a time per caller (else 429)
  SCHEDULE_INPUT_MAX_BYTES  a schedule's input as JSON at most (default 65536; schedules.maxInputBytes)
  WEBHOOK_ALLOWED_HOSTS  host or host:port (else 443) callbacks may go to, comma-separated (default none: no callbacks)
  WEBHOOK_CA_FILE      a PEM file of CA certificates trusted for callbacks besides Node's
  WEBHOOK_SYSTEM_SECRET  signs the callbacks of code schedules' executions (whsec_<base64>)

Exit status: 0 after SIGTERM/SIGINT or --help; 1 when the port is busy or the store unreachable;
2 for a bad flag, config file or variable.`

const invalid = (message: string) => new StartupError({ message, exitCode: 2 })

const readConfigFile = (path: string): Either.Either<ConfigFile, StartupError> => {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(path, "utf8"))
  } catch (error) {
    return Either.left(invalid(`Invalid config file ${path}: ${messageOf(error)}`))
  }
  return Schema.decodeUnknownEither(ConfigFile, { errors: "all", onExcessProperty: "error" })(raw).pipe(
    Either.mapLeft((error) => {
      const detail = ParseResult.ArrayFormatter.formatErrorSync(error)
        .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
        .join("; ")
      return invalid(`Invalid config file ${path}: ${detail}`)
    })
  )
}

/** What the command line asks for: the usage, or serving with a configuration. */
export type CommandLine =
  | { readonly _tag: "Help"; readonly text: string }
  | { readonly _tag: "Serve"; readonly config: ServerConfigShape }

/**
 * `--help` (or `-h`) wins over everything else, even a broken environment; otherwise the configuration:
 * command line > environment (DATABASE_URL, NODE_ENV, ...) > config file > defaults.
 */
export const parseCommandLine = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<CommandLine, StartupError> =>
  Effect.gen(function*() {
    const { values } = yield* Effect.try({
      try: () =>
        parseArgs({
          args: [...argv],
          options: {
            port: { type: "string" },
            host: { type: "string" },
            config: { type: "string" },
            help: { type: "boolean", short: "h" }
          },
          strict: true,
          allowPositionals: false
        }),
      catch: (error) => invalid(`${messageOf(error)}\n${usage}`)
    })
    if (values.help === true) return { _tag: "Help", text: helpText } as const
    return { _tag: "Serve", config: yield* configFrom(values, env) } as const
  })

/** The configuration of a command line (`--help` is a StartupError with exit code 0 here). The port never comes from PORT. */
export const loadConfig = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<ServerConfigShape, StartupError> =>
  Effect.flatMap(
    parseCommandLine(argv, env),
    (line) =>
      line._tag === "Serve" ? Effect.succeed(line.config) : new StartupError({ message: line.text, exitCode: 0 })
  )

const configFrom = (
  values: {
    readonly port?: string | undefined
    readonly host?: string | undefined
    readonly config?: string | undefined
  },
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<ServerConfigShape, StartupError> =>
  Effect.gen(function*() {
    const file = values.config === undefined ? {} : yield* readConfigFile(values.config)
    let port = file.port
    if (values.port !== undefined) {
      port = Number(values.port)
      if (!/^\d+$/.test(values.port) || port > 65535) {
        return yield* invalid(`--port: must be an integer from 0 to 65535, got "${values.port}"`)
      }
    }
    return yield* Effect.try({
      try: () => resolveServerConfig({ ...file, port, host: values.host ?? file.host }, env),
      catch: (error) => invalid(messageOf(error))
    })
  })
