import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize } from "node:path"

// The house's arrows (docs/architecture.md), read off the sources' relative imports.

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })

const files = sources("src").filter((file) => !file.startsWith("src/console/app/"))

/** A module's relative imports, type imports included (`import type`, `import("…").T`), as source paths. */
const importsOf = (file: string): ReadonlyArray<string> =>
  [...readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)\.js"/g)].map((match) => {
    const path = normalize(join(dirname(file), match[1]!))
    return existsSync(`${path}.tsx`) ? `${path}.tsx` : `${path}.ts`
  })

/** The import circles of `modules`: each strongly connected component of two or more (Tarjan), its files sorted. */
const circles = (modules: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<string>> => {
  const known = new Set(modules)
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const found: Array<Array<string>> = []
  const visit = (file: string) => {
    index.set(file, index.size)
    low.set(file, index.get(file)!)
    stack.push(file)
    for (const target of importsOf(file).filter((target) => known.has(target))) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (stack.includes(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        component.push(member)
      } while (member !== file)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const file of modules) if (!index.has(file)) visit(file)
  return found
}

/** The composition root: the only modules that may import anything. */
const root = new Set(["src/main.ts", "src/index.ts", "src/Service.ts"])
/** The top of the HTTP side: the whole API, the server, the docs routes. */
const isTop = (file: string) => file === "src/Api.ts" || /^src\/(server|docs)\//.test(file)
/** The kit every contract uses. */
const isKit = (file: string) => file.startsWith("src/http/")
/** A feature's HTTP contract or handlers, the authentication middleware, the RPC and WebSocket transports. */
const isEdge = (file: string) =>
  /(Api|handlers)\.ts$/.test(file) || file === "src/auth/Authentication.ts" || /^src\/(rpc|ws)\//.test(file) ||
  file === "src/console/ConsoleRoute.ts"

const violations = (allowed: (file: string) => boolean, forbidden: (target: string) => boolean) =>
  files.filter((file) => !root.has(file) && allowed(file)).flatMap((file) =>
    importsOf(file).filter(forbidden).map((target) => `${file} -> ${target}`)
  )

/** A folder of src/workflows (docs/architecture.md, "src/workflows"). */
const inWorkflows = (...folders: ReadonlyArray<string>) => (file: string) =>
  folders.some((folder) => file.startsWith(`src/workflows/${folder}/`))
const workflowsEdge = (file: string) => /^src\/workflows\/api\/(WorkflowsApi|handlers)\.ts$/.test(file)

describe("the house", () => {
  it("services, stores and the rest below the HTTP edge import nothing of HTTP", () => {
    const below = (file: string) => !isTop(file) && !isKit(file) && !isEdge(file)
    expect(violations(below, (target) => isTop(target) || isKit(target) || isEdge(target))).toEqual([])
  })

  it("the HTTP kit imports nothing of the top or of a feature's edge", () => {
    expect(violations(isKit, (target) => isTop(target) || isEdge(target))).toEqual([])
  })

  it("only the composition root imports the server", () => {
    expect(
      violations(() => true, (target) => /^src\/server\//.test(target)).filter((line) =>
        !line.startsWith("src/server/")
      )
    )
      .toEqual([])
  })

  it("storage imports no feature: the composition root hands it every feature's migrations", () => {
    const feature = (target: string) => !/^src\/(storage|ops|core)\//.test(target)
    expect(violations((file) => file.startsWith("src/storage/"), feature)).toEqual([])
  })

  it("the core (errors, ids, user code) imports nothing of the service", () => {
    expect(violations((file) => file.startsWith("src/core/"), (target) => !target.startsWith("src/core/"))).toEqual([])
  })

  it("configuration imports no feature: each reads its own section", () => {
    const feature = (target: string) => !/^src\/(config|storage|core)\//.test(target)
    expect(violations((file) => file.startsWith("src/config/"), feature)).toEqual([])
  })

  it("the package entry does not export the example app", () => {
    expect(importsOf("src/index.ts").filter((target) => target.startsWith("src/examples/"))).toEqual([])
  })

  it("the agents' generation core imports none of the features that plug into it", () => {
    const core = (file: string) => file.startsWith("src/agents/generation/")
    const feature = (target: string) =>
      /^src\/agents\/(approvals|delegation|guardrails|workingMemory)\//.test(target) ||
      /^src\/agents\/(AgentRegistry|plugged)\.ts$/.test(target)
    expect(violations(core, feature)).toEqual([])
  })

  it("the workflow definition imports nothing of the execution, the engine or the HTTP edge", () => {
    expect(violations(inWorkflows("definition"), inWorkflows("execution", "engine", "api"))).toEqual([])
  })

  it("inside src/workflows only api/ imports the workflows' HTTP edge (WorkflowsApi, handlers)", () => {
    const inside = (file: string) => file.startsWith("src/workflows/") && !inWorkflows("api")(file)
    expect(violations(inside, workflowsEdge)).toEqual([])
  })

  it("below the workflows' edge, api/ is imported for its wire schemas only (WorkflowSchemas)", () => {
    const below = inWorkflows("definition", "execution", "steps", "schedules", "concurrency")
    const api = (target: string) => inWorkflows("api")(target) && target !== "src/workflows/api/WorkflowSchemas.ts"
    expect(violations(below, api)).toEqual([])
  })

  it("the definition, steps, execution and concurrency import of the engine its contract only", () => {
    const engine = (target: string) =>
      inWorkflows("engine")(target) && target !== "src/workflows/engine/WorkflowEngineContract.ts"
    expect(violations(inWorkflows("steps", "execution", "concurrency", "definition"), engine)).toEqual([])
  })

  it("steps, execution, concurrency and the definition import nothing of schedules/ but code schedules", () => {
    const schedules = (target: string) =>
      inWorkflows("schedules")(target) && target !== "src/workflows/schedules/codeSchedules.ts"
    expect(violations(inWorkflows("steps", "execution", "concurrency", "definition"), schedules)).toEqual([])
  })

  it("no import circle in src, type imports and the console included", () => {
    const found = circles(sources("src"))
    if (found.length > 0) {
      console.log(found.map((circle) => `circle of ${circle.length}:\n  ${circle.join("\n  ")}`).join("\n"))
    }
    expect(found).toEqual([])
  })

  it("no source file is over 400 lines", () => {
    const long = sources("src").filter((file) => readFileSync(file, "utf8").split("\n").length > 400)
    expect(long).toEqual([])
  })
})
