/** The small JSON list the raw server and the minimal HttpApi app answer on GET /agents (the same bytes). */
export const AGENT_LIST = [
  { id: "assistant", name: "Assistant", purpose: "A helpful general assistant", status: "idle" },
  { id: "researcher", name: "Researcher", purpose: "Finds and summarises sources", status: "idle" },
  { id: "writer", name: "Writer", purpose: "Drafts text from notes", status: "idle" }
] as const

export const portArgument = (argv: ReadonlyArray<string>): number => {
  const index = argv.indexOf("--port")
  const port = index >= 0 ? Number(argv[index + 1]) : Number.NaN
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error("usage: --port <port>")
  return port
}
