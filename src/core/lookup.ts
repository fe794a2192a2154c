import { Effect } from "effect"
import { NotFound } from "./errors.js"

/** What a registry holds under `id`, or NotFound for a `kind` ("Agent", "Tool", ...). */
export const getOrNotFound = <A>(
  registry: ReadonlyMap<string, A>,
  kind: string,
  id: string
): Effect.Effect<A, NotFound> => {
  const found = registry.get(id)
  return found === undefined ? Effect.fail(NotFound.of(kind, id)) : Effect.succeed(found)
}
