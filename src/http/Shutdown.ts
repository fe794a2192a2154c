import { Context, Deferred, Effect, Layer } from "effect"

/**
 * Completed when the service begins to stop, before the HTTP server waits for open connections:
 * long-lived responses (SSE) end on it so that shutdown never waits for a client.
 */
export class Shutdown extends Context.Tag("Shutdown")<Shutdown, Deferred.Deferred<void>>() {}

export const ShutdownLive = Layer.scoped(
  Shutdown,
  Effect.acquireRelease(Deferred.make<void>(), (signal) => Deferred.succeed(signal, undefined))
)
