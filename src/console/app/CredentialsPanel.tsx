import { useEffect, useRef, useState } from "preact/hooks"
import { credentials, credentialsPrompt, saveCredentials } from "./credentials.js"
import { useStore } from "./store.js"

/** The token and key fields; opened by its button or by a 401, which says why. */
export const CredentialsPanel = () => {
  const prompt = useStore(credentialsPrompt)
  const saved = useStore(credentials)
  const [open, setOpen] = useState(false)
  const [token, setToken] = useState(saved.token)
  const [key, setKey] = useState(saved.key)
  const first = useRef<HTMLInputElement>(null)
  const shown = open || prompt !== undefined
  useEffect(() => {
    if (prompt !== undefined) first.current?.focus()
  }, [prompt])
  return (
    <div class="credentials">
      <button type="button" aria-expanded={shown} onClick={() => setOpen(!shown)}>
        Credentials{saved.token !== "" || saved.key !== "" ? " ✓" : ""}
      </button>
      {shown && (
        <form
          class="credentials-form"
          aria-label="Credentials"
          onKeyDown={(event) => {
            if (event.key === "Escape") {
              setOpen(false)
              credentialsPrompt.set(undefined)
            }
          }}
          onSubmit={(event) => {
            event.preventDefault()
            saveCredentials({ token: token.trim(), key: key.trim() })
            setOpen(false)
          }}
        >
          {prompt !== undefined && <p role="alert" class="error">The service answered 401: {prompt}</p>}
          <label>
            JWT (Authorization: Bearer)
            <input
              ref={first}
              data-testid="credentials-token"
              type="password"
              autocomplete="off"
              value={token}
              onInput={(event) => setToken(event.currentTarget.value)}
            />
          </label>
          <label>
            Console access key
            <input
              data-testid="credentials-key"
              type="password"
              autocomplete="off"
              value={key}
              onInput={(event) => setKey(event.currentTarget.value)}
            />
          </label>
          <p class="hint">Kept in this browser's local storage.</p>
          <button type="submit" data-testid="credentials-save">Save</button>
        </form>
      )}
    </div>
  )
}
