import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** A `text/event-stream` response body, as every streaming endpoint declares it. */
export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
).annotations({ description: "Server-Sent Events" })
