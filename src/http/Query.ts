import { ParseResult, Schema } from "effect"

/** A non-negative integer query parameter (documented as an integer, read from its string form). */
export const QueryInt = Schema.compose(
  Schema.String.annotations({ jsonSchema: { type: "integer", minimum: 0 } }),
  Schema.NumberFromString.pipe(
    Schema.int({ message: () => "must be an integer" }),
    Schema.nonNegative({ message: () => "must not be negative" })
  )
)

/** A listing's page, as `GET /workflows/executions` takes it: `limit` (LIST_DEFAULT, clamped to LIST_MAX) and `offset`. */
export const PageParams = Schema.Struct({ limit: Schema.optional(QueryInt), offset: Schema.optional(QueryInt) })
export const LIST_DEFAULT = 50
export const LIST_MAX = 500

/** The page `params` ask for, the defaults filled in and the limit clamped (a larger one is not an error). */
export const pageOf = (params: { readonly limit?: number | undefined; readonly offset?: number | undefined }) => ({
  limit: Math.min(params.limit ?? LIST_DEFAULT, LIST_MAX),
  offset: params.offset ?? 0
})

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/
const FIRST = Date.parse("0000-01-01T00:00:00Z")
const LAST = Date.parse("9999-12-31T23:59:59.999Z")

// Date.UTC reads years 0-99 as 1900-1999; setUTCFullYear does not.
const daysIn = (year: number, month: number) => {
  const date = new Date(0)
  date.setUTCFullYear(year, month, 0)
  return date.getUTCDate()
}

/**
 * The instant an ISO 8601 date or date-time names (a time without an offset is UTC), or why it names
 * none. Instants are kept within the years 0000-9999, where their ISO text (`toISOString`) is fixed-width,
 * so comparing that text, as the stores do with their ISO `created_at` / `timestamp`, compares instants.
 */
export const parseInstant = (text: string): Date | string => {
  if (/^[+-]?\d{5,}-/.test(text)) return "must be between 0000-01-01 and 9999-12-31"
  const match = ISO_8601.exec(text)
  if (match === null) return "must be an ISO 8601 timestamp"
  const [, year, month, day, hour = "0", minute = "0", second = "0", offset] = match
  if (
    Number(month) < 1 || Number(month) > 12 || Number(day) < 1 || Number(day) > daysIn(Number(year), Number(month)) ||
    Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59
  ) {
    return "must be a real date and time of day"
  }
  const instant = Date.parse(match[4] !== undefined && offset === undefined ? `${text}Z` : text)
  if (Number.isNaN(instant)) return "must be an ISO 8601 timestamp"
  if (instant < FIRST || instant > LAST) return "must be between 0000-01-01 and 9999-12-31"
  return new Date(instant)
}

/**
 * An ISO 8601 timestamp query parameter (years 0000-9999), decoded to its instant's canonical UTC ISO
 * text: what the stores compare their ISO columns with.
 */
export const Timestamp = Schema.transformOrFail(Schema.String, Schema.String, {
  strict: true,
  decode: (text, _, ast) => {
    const parsed = parseInstant(text)
    return typeof parsed === "string"
      ? ParseResult.fail(new ParseResult.Type(ast, text, parsed))
      : ParseResult.succeed(parsed.toISOString())
  },
  encode: ParseResult.succeed
})
