/** Any value's JSON text: as JSON.stringify gives it (stringify), never undefined (jsonText), or with object keys sorted for digests (canonicalJson). */

// JSON.stringify's type says string; it gives undefined for undefined, a function or a symbol.
export const stringify: (value: unknown, replacer?: (key: string, value: unknown) => unknown) => string | undefined =
  JSON.stringify

export const jsonText = (value: unknown): string => stringify(value) ?? "null"

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Keys sorted, so an object a client rebuilt in another key order has the same text. */
export const canonicalJson = (value: unknown): string =>
  stringify(
    value,
    (_key, field) =>
      isPlainObject(field) ? Object.fromEntries(Object.keys(field).sort().map((key) => [key, field[key]])) : field
  ) ?? "null"
