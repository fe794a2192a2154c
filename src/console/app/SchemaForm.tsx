import { useMemo, useState } from "preact/hooks"
import { messageOf } from "../../core/errorMessages.js"
import { exampleOf, type Field, fieldsOf, fieldValue, initialText, propertiesOf, validate } from "./schema.js"
import type { JsonSchema } from "./types.js"

export interface SchemaFormProps {
  readonly schema: JsonSchema
  /** Names the form (its fields' ids start with it). */
  readonly name: string
  readonly testId: string
  readonly submitTestId: string
  readonly submitLabel: string
  /** Whether the form starts from the schema's `default` or first of its `examples` (else blank). */
  readonly prefill?: boolean
  readonly onSubmit: (value: unknown) => Promise<void>
}

const FieldInput = (
  { field, id, text, setText }: { field: Field; id: string; text: string; setText: (text: string) => void }
) => {
  if (field.kind === "boolean") {
    return (
      <input
        id={id}
        name={field.name}
        type="checkbox"
        checked={text === "true"}
        onChange={(event) => setText(event.currentTarget.checked ? "true" : "false")}
      />
    )
  }
  if (field.kind === "enum") {
    return (
      <select id={id} name={field.name} value={text} onChange={(event) => setText(event.currentTarget.value)}>
        {!field.required && <option value="">—</option>}
        {field.options.map((option) => <option key={option} value={option}>{option}</option>)}
      </select>
    )
  }
  return (
    <input
      id={id}
      name={field.name}
      type={field.kind === "string" ? "text" : "number"}
      step={field.kind === "integer" ? "1" : "any"}
      required={field.required}
      value={text}
      onInput={(event) => setText(event.currentTarget.value)}
    />
  )
}

/**
 * A form generated from a JSON Schema: one field per property when every property is a scalar, else
 * (or on request) a JSON editor. The value is validated against the schema before `onSubmit`. The form
 * keeps its state: give it a `key` that changes with the schema.
 */
export const SchemaForm = (props: SchemaFormProps) => {
  const fields = useMemo(() => fieldsOf(props.schema), [props.schema])
  const example = props.prefill === true ? exampleOf(props.schema) : undefined
  const [asJson, setAsJson] = useState(fields === undefined)
  const [texts, setTexts] = useState<Record<string, string>>(() => {
    const properties = props.prefill === true ? propertiesOf(props.schema) : {}
    return Object.fromEntries(
      (fields ?? []).map((field) => [field.name, initialText(field, example, properties[field.name])])
    )
  })
  const [json, setJson] = useState(() => JSON.stringify(example ?? {}, null, 2))
  const [errors, setErrors] = useState<ReadonlyArray<string>>([])
  const [busy, setBusy] = useState(false)

  const fromFields = () =>
    Object.fromEntries((fields ?? []).flatMap((field) => {
      const value = fieldValue(field, texts[field.name] ?? "")
      return value === undefined ? [] : [[field.name, value]]
    }))

  const submit = async (event: Event) => {
    event.preventDefault()
    let value: unknown
    if (asJson) {
      try {
        value = JSON.parse(json)
      } catch (error) {
        return setErrors([`Not JSON: ${messageOf(error)}`])
      }
    } else {
      value = fromFields()
    }
    const problems = validate(props.schema, value)
    setErrors(problems)
    if (problems.length > 0) return
    setBusy(true)
    try {
      await props.onSubmit(value)
    } catch (error) {
      setErrors([messageOf(error)])
    } finally {
      setBusy(false)
    }
  }

  const toggle = () => {
    if (!asJson) setJson(JSON.stringify(fromFields(), null, 2))
    setAsJson(!asJson)
  }

  return (
    <form class="schema-form" data-testid={props.testId} onSubmit={(event) => void submit(event)} noValidate>
      {asJson || fields === undefined
        ? (
          <label>
            Value (JSON)
            <textarea
              name="json"
              rows={6}
              spellcheck={false}
              value={json}
              onInput={(event) => setJson(event.currentTarget.value)}
            />
          </label>
        )
        : fields.map((field) => {
          const id = `${props.name}-${field.name}`
          return (
            <div class="field" key={field.name}>
              <label for={id}>{field.name}{field.required ? " *" : ""}</label>
              <FieldInput
                field={field}
                id={id}
                text={texts[field.name] ?? ""}
                setText={(text) => setTexts({ ...texts, [field.name]: text })}
              />
              {field.description !== undefined && <span class="meta">{field.description}</span>}
            </div>
          )
        })}
      {errors.length > 0 && <ul role="alert" class="error">{errors.map((error) => <li key={error}>{error}</li>)}</ul>}
      <div class="row">
        <button type="submit" data-testid={props.submitTestId} disabled={busy}>{props.submitLabel}</button>
        {fields !== undefined && (
          <button type="button" onClick={toggle}>{asJson ? "Edit as form" : "Edit as JSON"}</button>
        )}
      </div>
    </form>
  )
}
