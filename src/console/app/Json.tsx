/** A value as indented JSON, rendered as text (never HTML). */
export const Json = ({ label, value }: { label?: string; value: unknown }) => (
  <div class="json">
    {label !== undefined && <span class="meta">{label}</span>}
    <pre>{value === undefined ? "—" : JSON.stringify(value, null, 2)}</pre>
  </div>
)
