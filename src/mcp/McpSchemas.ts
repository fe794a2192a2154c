import { Schema } from "effect"

export const McpServerInfo = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  version: Schema.String,
  description: Schema.String,
  transport: Schema.Struct({
    type: Schema.Literal("streamable-http"),
    endpoint: Schema.String.annotations({ description: "path of the MCP endpoint on this service" })
  }),
  toolCount: Schema.Number
}).annotations({ identifier: "McpServer" })
export type McpServerInfo = typeof McpServerInfo.Type
