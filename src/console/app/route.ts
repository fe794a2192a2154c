import { createStore, useStore } from "./store.js"

/** The view is in the location's hash (#/workflows/approval/executions/…): the server serves one page. */
const parse = () =>
  location.hash.replace(/^#\/?/, "").split("/").filter((part) => part !== "").map((part) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  })

const route = createStore<ReadonlyArray<string>>(parse())
addEventListener("hashchange", () => route.set(parse()))

export const useRoute = () => useStore(route)

export const href = (...parts: ReadonlyArray<string>) => `#/${parts.map(encodeURIComponent).join("/")}`

export const navigate = (...parts: ReadonlyArray<string>) => {
  location.hash = href(...parts)
}
