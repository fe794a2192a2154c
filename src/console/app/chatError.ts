/**
 * What a failed chat turn says. The SDK's transport throws the response's text when a request is
 * refused (a 422 from an input guardrail is the error envelope naming the guardrail in
 * `errorDetail.fields`); a block mid-stream arrives as an `error` chunk holding only the message.
 */
export interface ChatFailure {
  readonly message: string
  readonly guardrail?: { readonly name: string; readonly stage: string }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

export const chatFailure = (error: Error): ChatFailure => {
  let body: unknown
  try {
    body = JSON.parse(error.message)
  } catch {
    return { message: error.message }
  }
  if (!isRecord(body) || typeof body.error !== "string") return { message: error.message }
  const detail = body.errorDetail
  if (isRecord(detail) && detail._tag === "GuardrailBlocked" && isRecord(detail.fields)) {
    return {
      message: body.error,
      guardrail: { name: String(detail.fields.guardrail), stage: String(detail.fields.stage) }
    }
  }
  return { message: body.error }
}
