/** Where one signal goes under OTEL_EXPORTER_OTLP_ENDPOINT (the OTLP/HTTP rule: `<endpoint>/v1/<signal>`). */
export const otlpUrl = (endpoint: string, signal: "traces" | "metrics" | "logs"): string =>
  `${endpoint.replace(/\/$/, "")}/v1/${signal}`
