/** The service's name and version, as the OpenAPI document, MCP clients and telemetry announce it. */
export const serviceInfo = { title: "Agent and Workflow Service", version: "1.0.0" } as const
