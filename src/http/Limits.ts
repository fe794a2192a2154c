/** How many log entries one read returns (HTTP, RPC and WebSocket alike). */
const LOGS_DEFAULT = 100
export const LOGS_MAX = 1000

export const logLimit = (limit: number | undefined) => Math.min(limit ?? LOGS_DEFAULT, LOGS_MAX)
