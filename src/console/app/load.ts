import { useCallback, useEffect, useState } from "preact/hooks"
import { messageOf } from "../../core/errorMessages.js"
import { credentialsEpoch } from "./credentials.js"
import { useStore } from "./store.js"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly reload: () => void
}

/** Runs `load` when a dependency or the credentials change; a stale answer is dropped. */
export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>): Loaded<A> => {
  const epoch = useStore(credentialsEpoch)
  const [state, setState] = useState<{ data: A | undefined; error: string | undefined }>({
    data: undefined,
    error: undefined
  })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let current = true
    load().then(
      (data) => current && setState({ data, error: undefined }),
      (error: unknown) => current && setState({ data: undefined, error: messageOf(error) })
    )
    return () => {
      current = false
    }
  }, [...deps, epoch, tick])
  const reload = useCallback(() => setTick((tick) => tick + 1), [])
  return { ...state, reload }
}
