/**
 * What the rows of one bench run share: the options, the build under test (its dist/main.js), the fake
 * model and the service they load (started on first use and stopped at the end of the run).
 */
import type { JSONSchema7 } from "json-schema"
import type { ServiceProcess } from "../support/service.js"
import {
  fakeModelEnv,
  HEAD_MAIN,
  type RunningService,
  type Server,
  spawnServiceProcess,
  startBenchService,
  startFake,
  startServiceOn
} from "./processes.js"

export interface BenchOptions {
  readonly seconds: number
  readonly connections: number
  /** Suspended executions whose re-attach streams row 7a opens, and streams per execution. */
  readonly reattachExecutions: number
  readonly streamsPerExecution: number
  /** Agent streams row 7b holds open. */
  readonly agentStreams: number
  /** Suspended executions row 7c creates over HTTP. */
  readonly suspendedExecutions: number
  /** Executions row 6 stores before it lists them. */
  readonly storedExecutions: number
  readonly startups: number
  /** Executions row 10 parks at once. */
  readonly sleepers: number
  /** The Postgres server row 9 creates its databases on (an administrative database's URL) and the durability read-out asks. */
  readonly postgresUrl: string
}

/** A database URL fit to print: its password, if it has one, replaced. */
export const printableUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(an unparsable URL)"
  }
}

export const printableOptions = (options: BenchOptions): BenchOptions => ({
  ...options,
  postgresUrl: printableUrl(options.postgresUrl)
})

/** A request rows 1 to 5 send to the server under test (its path and JSON body). */
export interface TargetRequest {
  readonly path: string
  readonly body: unknown
}

/**
 * What rows 1 to 5 need to know of the server they load: ours (`dist/main.js`) or a peer framework's
 * (scripts/bench/peer.ts). The rows are the same; only these differ.
 */
export interface ServiceTarget {
  /** How tables name it ("ours", or the peer's name and version). */
  readonly name: string
  readonly agents: { readonly path: string }
  readonly text: TargetRequest
  readonly stream: TargetRequest & {
    /** Whether the bytes received so far hold the first SSE frame carrying text. */
    readonly ready: (received: string) => boolean
  }
  readonly pipeline: TargetRequest
}

export interface Lab {
  readonly options: BenchOptions
  /** The server rows 1 to 5 load: ours unless the bench runs against a peer. */
  readonly target: ServiceTarget
  /** The entry point of the build under test; every service a row starts runs it. */
  readonly serviceMain: string
  /** A service of the build under test on a SQLite file (a new one when omitted). */
  readonly startService: (options: {
    readonly env: Record<string, string>
    readonly databaseFile?: string
  }) => Promise<RunningService>
  /** A service of the build under test on any DATABASE_URL. */
  readonly startServiceOn: (
    databaseUrl: string,
    env: Record<string, string>
  ) => Promise<Server & { readonly process: ServiceProcess }>
  /** A service of the build under test spawned without waiting for it. */
  readonly spawnService: (port: number, databaseFile: string, env: Record<string, string>) => ServiceProcess
  /** The fake model (one process for the whole run). */
  readonly fake: () => Promise<Server>
  /** The service pointed at the fake, shared by rows 1 to 5. */
  readonly service: () => Promise<RunningService>
  /** The env that points a service at the fake. */
  readonly modelEnv: () => Promise<Record<string, string>>
  /** The database file of the shared service, when it was started. */
  readonly serviceDatabase: () => Promise<string | undefined>
  readonly close: () => Promise<void>
}

export const once = <A>(make: () => Promise<A>) => {
  let made: Promise<A> | undefined
  return {
    get: () => (made ??= make()),
    started: () => made
  }
}

export const makeLab = (options: BenchOptions, serviceMain: string = HEAD_MAIN): Lab => {
  const fake = once(startFake)
  const modelEnv = async () => ({ ...fakeModelEnv(await fake.get()), LOG_LEVEL: "info" })
  const service = once(async () => startBenchService({ main: serviceMain, env: await modelEnv() }))
  return {
    options,
    target: OURS,
    serviceMain,
    startService: (start) => startBenchService({ ...start, main: serviceMain }),
    startServiceOn: (databaseUrl, env) => startServiceOn(serviceMain, databaseUrl, env),
    spawnService: (port, databaseFile, env) => spawnServiceProcess(serviceMain, port, databaseFile, env),
    fake: fake.get,
    service: service.get,
    modelEnv,
    serviceDatabase: async () => service.started()?.then((running) => running.databaseFile, () => undefined),
    close: async () => {
      await service.started()?.then((running) => running.stop(), () => undefined)
      await fake.started()?.then((running) => running.stop(), () => undefined)
    }
  }
}

/** The agent every agent row calls, and the chat request the service sends the fake for it (as near as the bench can say). */
export const AGENT_ID = "assistant"

const weatherParameters: JSONSchema7 = {
  type: "object",
  properties: { location: { type: "string" } },
  required: ["location"]
}
const addParameters: JSONSchema7 = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"]
}

export const chatRequest = (input: string, stream: boolean) => ({
  model: "fake-model",
  messages: [
    {
      role: "system",
      content:
        "You are a helpful assistant. Use the get_weather tool for weather questions and the add tool for sums. Answer briefly."
    },
    { role: "user", content: input }
  ],
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Current weather for a location",
        parameters: weatherParameters
      }
    },
    {
      type: "function",
      function: {
        name: "add",
        description: "Add two numbers",
        parameters: addParameters
      }
    }
  ],
  temperature: 0.7,
  max_tokens: 4000,
  stream,
  ...(stream ? { stream_options: { include_usage: true } } : {})
})

/** The service's first SSE frame carrying text (frames are `data: {"type":"text-delta",...}`). */
export const serviceTextDelta = (received: string) => received.includes(`"type":"text-delta"`)

/** Our service: the routes of src/examples (the agent `assistant`, the workflow `pipeline`). */
export const OURS: ServiceTarget = {
  name: "ours",
  agents: { path: "/agents" },
  text: { path: `/agents/${AGENT_ID}/text`, body: { input: "hi" } },
  stream: { path: `/agents/${AGENT_ID}/stream`, body: { input: "hi" }, ready: serviceTextDelta },
  pipeline: { path: "/workflows/pipeline/execute", body: { input: { text: " hi ", n: 21 } } }
}

/** The fake's first chunk with non-empty content (its first chunk only carries the role). */
export const fakeTextDelta = (received: string) => /"delta":\{"content":"[^"]/.test(received)
