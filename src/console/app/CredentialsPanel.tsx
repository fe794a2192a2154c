import type { Ref } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { credentials, credentialsPrompt, saveCredentials } from "./credentials.js"
import { useStore } from "./store.js"

/** A secret's field: masked, never autocompleted. */
const SecretField = (props: {
  readonly label: string
  readonly testId: string
  readonly value: string
  readonly onInput: (value: string) => void
  readonly inputRef?: Ref<HTMLInputElement>
}) => (
  <label>
    {props.label}
    <input
      ref={props.inputRef}
      data-testid={props.testId}
      type="password"
      autocomplete="off"
      value={props.value}
      onInput={(event) => props.onInput(event.currentTarget.value)}
    />
  </label>
)

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
          <SecretField
            label="JWT (Authorization: Bearer)"
            testId="credentials-token"
            value={token}
            onInput={setToken}
            inputRef={first}
          />
          <SecretField label="Console access key" testId="credentials-key" value={key} onInput={setKey} />
          <p class="hint">Kept in this browser's local storage.</p>
          <button type="submit" data-testid="credentials-save">Save</button>
        </form>
      )}
    </div>
  )
}
