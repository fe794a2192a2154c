import { HttpServerResponse } from "@effect/platform"
import { Deferred, Effect, Stream } from "effect"
import { Shutdown } from "./Shutdown.js"

const encoder = new TextEncoder()
const member = (key: string, value: unknown) => `${JSON.stringify(key)}:${JSON.stringify(value)}`

/**
 * The success envelope `{"success":true,"data":{…}}` of `data` whose `field` is the array `items`,
 * written as a stream (issue #42): each other field, then each item, is encoded as the socket takes
 * the previous one, never as one string of the whole body. Fields keep `data`'s order, `field` where it
 * stands in it; undefined fields are left out, as JSON.stringify leaves them. A failure after the status
 * line ends the body short (the client sees JSON that does not parse).
 */
export const streamedJsonResponse = <E>(
  data: Readonly<Record<string, unknown>>,
  field: string,
  items: Stream.Stream<unknown, E>
) =>
  Effect.map(Shutdown, (shutdown) => {
    const members = Object.entries(data).filter(([key, value]) => value !== undefined || key === field)
    const at = members.findIndex(([key]) => key === field)
    const before = members.slice(0, at)
    const after = members.slice(at + 1)
    const texts = (list: ReadonlyArray<readonly [string, unknown]>, lead: string) =>
      Stream.fromIterable(list).pipe(Stream.map(([key, value]) => `${lead}${member(key, value)}`))
    const body = Stream.make("{\"success\":true,\"data\":{").pipe(
      Stream.concat(
        Stream.zipWithIndex(texts(before, "")).pipe(Stream.map(([text, i]) => i === 0 ? text : `,${text}`))
      ),
      Stream.concat(Stream.make(`${before.length === 0 ? "" : ","}${JSON.stringify(field)}:[`)),
      Stream.concat(
        Stream.zipWithIndex(items).pipe(Stream.map(([item, i]) => `${i === 0 ? "" : ","}${JSON.stringify(item)}`))
      ),
      Stream.concat(Stream.make("]")),
      Stream.concat(texts(after, ",")),
      Stream.concat(Stream.make("}}")),
      Stream.map((text) => encoder.encode(text)),
      Stream.rechunk(1),
      Stream.interruptWhen(Deferred.await(shutdown))
    )
    return HttpServerResponse.stream(body, { contentType: "application/json" })
  })
