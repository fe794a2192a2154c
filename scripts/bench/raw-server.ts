/**
 * The bench's ceiling: raw node:http answering GET /agents with a small JSON list (any other path 404).
 * Run as its own process: `node .build/scripts/bench/raw-server.js --port 4100`.
 */
import { createServer } from "node:http"
import { AGENT_LIST, portArgument } from "./fixture.js"

const body = JSON.stringify(AGENT_LIST)

const server = createServer((req, res) => {
  req.resume()
  if (req.method === "GET" && req.url === "/agents") {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
  } else {
    res.writeHead(404).end()
  }
})
server.listen(portArgument(process.argv), "127.0.0.1")
process.on("SIGTERM", () => server.close(() => process.exit(0)))
