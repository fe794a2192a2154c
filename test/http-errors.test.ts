import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "node:http"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const LIMIT = 1024

/** A raw request with a chunked body (no content-length), which fetch cannot send with a plain string. */
const postChunked = (url: string, chunks: ReadonlyArray<string>) =>
  Effect.async<{ status: number; body: any }, Error>((resume) => {
    const req = request(url, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (text += chunk))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body: JSON.parse(text) })))
    })
    req.on("error", (error) => resume(Effect.fail(error)))
    for (const chunk of chunks) req.write(chunk)
    req.end()
  })

layer(TestServerLive({ config: { bodyLimit: LIMIT } }), { excludeTestServices: true })(
  "error envelope on the wire",
  (it) => {
    it.effect("unknown route: 404 Not found, also for unknown methods", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        expect(yield* fetchJson(`${url}/no/such/route`)).toMatchObject({
          status: 404,
          body: { success: false, error: "Not found" }
        })
        const deleted = yield* fetchJson(`${url}/tools`, { method: "DELETE" })
        expect(deleted).toMatchObject({ status: 404, body: { success: false, error: "Not found" } })
        expect(deleted.headers.get("content-type")).toMatch(/application\/json/)
      }))

    it.effect("malformed JSON: 400 Invalid JSON body with the parser's message", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/tools/add/execute`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{\"input\": "
        })
        expect(response.status).toBe(400)
        expect(response.body.success).toBe(false)
        expect(response.body.error).toMatch(/^Invalid JSON body: .+/)
      }))

    it.effect("no body at all (no content type, or JSON's with nothing) is an empty object: cancel and suspend need none", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (const headers of [{}, { "content-type": "application/json" }] as Array<Record<string, string>>) {
          const started = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 250 } }))
          expect(started.body.data.status).toBe("suspended")
          const cancel = yield* fetchJson(
            `${url}/workflows/approval/executions/${started.body.data.executionId}/cancel`,
            { method: "POST", headers }
          )
          expect(cancel, JSON.stringify(cancel.body)).toMatchObject({ status: 200, body: { success: true } })
          const suspend = yield* fetchJson(`${url}/workflows/approval/executions/no-such-execution/suspend`, {
            method: "POST",
            headers
          })
          expect(suspend.status, JSON.stringify(headers)).toBe(404)
        }
        // A body with required fields names what is missing.
        const text = yield* fetchJson(`${url}/agents/assistant/text`, { method: "POST" })
        expect(text.status).toBe(400)
        expect(text.body.error).not.toContain("body: must be an object")
      }))

    it.effect("schema failure: 400 Input validation failed: <path>: <message>, never a schema dump", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const notObject = yield* fetchJson(`${url}/tools/add/execute`, json([1, 2]))
        expect(notObject).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: body: must be an object" }
        })
        const badContext = yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: 1, b: 2 }, context: "x" }))
        expect(badContext).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: context: must be an object" }
        })
      }))

    it.effect("a body that is not JSON is refused with 400", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/tools/add/execute`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "a=1&b=2"
        })
        expect(response).toMatchObject({
          status: 400,
          body: { success: false, error: "Request body must be JSON (content-type: application/json)" }
        })
      }))

    it.effect("body over the limit: 413 by content-length, before anything is read", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/tools/add/execute`, json({ input: { pad: "x".repeat(LIMIT) } }))
        expect(response).toMatchObject({
          status: 413,
          body: { success: false, error: `Request body exceeds ${LIMIT} bytes` }
        })
      }))

    it.effect("chunked body over the limit: 413 too, not a reset connection", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* postChunked(`${url}/tools/add/execute`, ["{\"input\":\"", "y".repeat(LIMIT), "\"}"])
        expect(response).toEqual({
          status: 413,
          body: { success: false, error: `Request body exceeds ${LIMIT} bytes` }
        })
        const small = yield* postChunked(`${url}/tools/add/execute`, ["{\"input\":", "{\"a\":1,\"b\":2}}"])
        expect(small).toMatchObject({ status: 200, body: { success: true, data: { result: { sum: 3 } } } })
        const broken = yield* postChunked(`${url}/tools/add/execute`, ["{\"input\":", "{"])
        expect(broken.status).toBe(400)
        expect(broken.body.error).toMatch(/^Invalid JSON body: /)
      }))

    it.effect("CORS: any origin is allowed by default, without credentials", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* Effect.promise(() =>
          fetch(`${url}/tools`, { headers: { origin: "http://example.test" } })
        )
        expect(response.headers.get("access-control-allow-origin")).toBe("*")
        expect(response.headers.get("access-control-allow-credentials")).toBeNull()
      }))
  }
)
