import { Redacted } from "effect"
import { createHmac, randomBytes } from "node:crypto"

/** The prefix of a signing secret as shown (Standard Webhooks): `whsec_` and the key's base64. */
export const SECRET_PREFIX = "whsec_"

/** A new secret: 32 random bytes, as `whsec_<base64>`. */
export const newSecret = (): Redacted.Redacted<string> =>
  Redacted.make(`${SECRET_PREFIX}${randomBytes(32).toString("base64")}`)

/** The key bytes of a `whsec_` secret (the base64 after the prefix). */
const keyOf = (secret: Redacted.Redacted<string>) => {
  const text = Redacted.value(secret)
  return Buffer.from(text.startsWith(SECRET_PREFIX) ? text.slice(SECRET_PREFIX.length) : text, "base64")
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under one secret (Standard Webhooks). */
export const sign = (secret: Redacted.Redacted<string>, id: string, timestampSeconds: number, body: string) =>
  `v1,${createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

/** The headers of a delivery: its stable id, the attempt's time, and a signature per valid secret (space-separated). */
export const signatureHeaders = (
  secrets: ReadonlyArray<Redacted.Redacted<string>>,
  id: string,
  timestampSeconds: number,
  body: string
): Record<string, string> => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(" ")
})
