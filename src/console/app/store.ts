import { useEffect, useState } from "preact/hooks"

/** A value the views share, with change notification. */
export interface Store<A> {
  readonly get: () => A
  readonly set: (value: A) => void
  readonly subscribe: (listener: (value: A) => void) => () => void
}

export const createStore = <A>(initial: A): Store<A> => {
  let value = initial
  const listeners = new Set<(value: A) => void>()
  return {
    get: () => value,
    set: (next) => {
      value = next
      listeners.forEach((listener) => listener(next))
    },
    subscribe: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    }
  }
}

/** The store's current value; the component renders again when it changes. */
export const useStore = <A>(store: Store<A>): A => {
  const [value, setValue] = useState(store.get())
  useEffect(() => {
    setValue(store.get())
    return store.subscribe(setValue)
  }, [store])
  return value
}
