import { createStore } from "./store.js"

/**
 * The JWT (sent as `Authorization: Bearer`, and `?token=` on WebSockets) and the console access key
 * (sent as `x-console-access-key`, and `?key=` on WebSockets), kept in the browser's local storage.
 */
export interface Credentials {
  readonly token: string
  readonly key: string
}

const TOKEN = "console.token"
const KEY = "console.key"

const read = (name: string) => {
  try {
    return localStorage.getItem(name) ?? ""
  } catch {
    return ""
  }
}

export const credentials = createStore<Credentials>({ token: read(TOKEN), key: read(KEY) })

/** Why credentials are asked for (a 401's message), or undefined when nothing asks. */
export const credentialsPrompt = createStore<string | undefined>(undefined)

/** Bumped when credentials change, so that views load again with them. */
export const credentialsEpoch = createStore(0)

export const saveCredentials = (next: Credentials) => {
  try {
    localStorage.setItem(TOKEN, next.token)
    localStorage.setItem(KEY, next.key)
  } catch {
    // Storage may be disabled; the credentials still last for this page.
  }
  credentials.set(next)
  credentialsPrompt.set(undefined)
  credentialsEpoch.set(credentialsEpoch.get() + 1)
}

/** The console key header is the service's (src/auth/Authentication.ts); x-service-dev marks console writes. */
export const authHeaders = (): Record<string, string> => {
  const { key, token } = credentials.get()
  return {
    "x-service-dev": "true",
    ...(token === "" ? {} : { authorization: `Bearer ${token}` }),
    ...(key === "" ? {} : { "x-console-access-key": key })
  }
}

/** WebSocket handshakes carry no headers: the same credentials as query parameters. */
export const socketParams = (params: URLSearchParams) => {
  const { key, token } = credentials.get()
  params.set("dev", "true")
  if (token !== "") params.set("token", token)
  if (key !== "") params.set("key", key)
  return params
}
