import { authHeaders, credentialsPrompt } from "./credentials.js"

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

const errorMessage = (body: unknown, status: number): string => {
  if (typeof body === "object" && body !== null && "error" in body) {
    const error = (body as { error: unknown }).error
    if (typeof error === "string") return error
    if (typeof error === "object" && error !== null && "message" in error) {
      return String((error as { message: unknown }).message)
    }
  }
  return `HTTP ${status}`
}

/** A failed response's message; a 401 also asks for credentials. */
export const failure = async (response: Response): Promise<ApiError> => {
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: the text is the message
  }
  const message = typeof body === "string" && body !== "" ? body : errorMessage(body, response.status)
  if (response.status === 401) credentialsPrompt.set(message)
  return new ApiError(response.status, message)
}

/** fetch with the console's credentials; a 401 asks for them. */
export const send = async (path: string, init: RequestInit = {}): Promise<Response> => {
  const response = await fetch(path, {
    ...init,
    headers: { ...authHeaders(), ...init.headers }
  })
  if (response.status === 401) await failure(response.clone())
  return response
}

/** A call to the API: the envelope's data, or an ApiError. */
export const api = async <A>(path: string, init: { method?: string; body?: unknown } = {}): Promise<A> => {
  const response = await send(path, {
    method: init.method ?? "GET",
    ...(init.body === undefined
      ? {}
      : { body: JSON.stringify(init.body), headers: { "content-type": "application/json" } })
  })
  if (!response.ok) throw await failure(response)
  const body = await response.json() as { success: boolean; data: A }
  return body.data
}

export const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") search.set(name, String(value))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

export const segment = encodeURIComponent
