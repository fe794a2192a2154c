// Apart from errors.ts so that the writer threads, which report failures as text, load no Schema.

/** The message of anything thrown or failed with: an Error's, an object's `message`, else its text. */
export const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
    ? (error as { message: string }).message
    : String(error)

/** An error's message and its cause's (an SqlError's own message says only which operation failed). */
export const messageWithCause = (error: unknown): string =>
  error instanceof Error && error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : messageOf(error)
