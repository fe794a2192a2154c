import { Context, Effect, FiberSet, Layer, Option, Redacted, Schema } from "effect"
import type { Caller, Visibility } from "../auth/Ownership.js"
import { canSee, SYSTEM_USER_PREFIX } from "../auth/Ownership.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { defaultWebhookSettings, type WebhookSettings } from "../config/WebhookSettings.js"
import { BadRequest, NotFound } from "../core/errors.js"
import { Lifecycle } from "../health/Lifecycle.js"
import { countWebhookDelivery } from "../observability/metrics/instruments.js"
import { DueWork } from "../scheduling/DueWork.js"
import { makeDeliverySlots } from "./DeliverySlots.js"
import type { WebhookDeliveryView } from "./WebhookSchemas.js"
import { newSecret, signatureHeaders } from "./WebhookSignature.js"
import { type AttemptRecord, type Delivery, makeWebhookStore } from "./WebhookStore.js"
import { postWebhook } from "./WebhookTransport.js"
import { checkWebhookUrl, redactUrl } from "./WebhookUrls.js"

/** The due-work kind of callback deliveries. */
export const WEBHOOK_DELIVERY_KIND = "webhook-delivery"
/** A taken delivery is due again after this long if its instance never records the attempt (it died). */
const CLAIM_LEASE_MS = 60_000
/**
 * Attempts in flight per instance at most: after a receiver's outage, what falls due is taken as
 * attempts end (the due-work poll takes the rest), not all at once past the claim's lease. Each
 * owner has `webhooks.maxInFlightPerOwner` of them at most.
 */
const MAX_IN_FLIGHT = 64
/** Deliveries listed per execution at most. */
export const DELIVERIES_LISTED = 100

export interface SecretInfo {
  readonly createdAt: string
  readonly rotatedAt: string
  readonly previousValidUntil: string | null
}

export class Webhooks extends Context.Tag("Webhooks")<Webhooks, {
  /** 400 naming the reason when `url` cannot be this caller's callback (the URL's checks, a signing secret made). */
  readonly checkStart: (url: string, caller: Caller) => Effect.Effect<void, BadRequest>
  /** A new signing secret for the caller, shown once; the previous one still signs during the grace. */
  readonly rotateSecret: (caller: Caller) => Effect.Effect<SecretInfo & { readonly secret: string }>
  readonly secretInfo: (caller: Caller) => Effect.Effect<SecretInfo, NotFound>
  readonly deliveries: (
    workflowId: string,
    executionId: string,
    visibility: Visibility
  ) => Effect.Effect<ReadonlyArray<WebhookDeliveryView>, NotFound>
}>() {}

/** Whose secret signs a caller's callbacks: the caller's id under authentication, '' without it. */
const ownerOf = (caller: Caller) => (caller.owned ? caller.userId ?? "" : "")

/** The wait before retry `attempt + 1`: the back-off doubling from `backoffMs`, at most `maxBackoffMs`. */
export const backoffAfter = (settings: WebhookSettings, attempt: number) =>
  Math.min(settings.maxBackoffMs, settings.backoffMs * 2 ** Math.min(Math.max(0, attempt - 1), 40))

/** A stored payload (WebhookOutbox's DeliveryPayload), read back. */
const decodePayload = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  type: Schema.String,
  timestamp: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})))

/** The body a delivery sends, the same on every attempt. */
const bodyOf = (delivery: Delivery) => {
  const stored = decodePayload(delivery.payload)
  return JSON.stringify({
    type: stored.type,
    timestamp: stored.timestamp,
    data: { executionId: delivery.executionId, workflowId: delivery.workflowId, ...stored.data }
  })
}

const infoOf = (
  row: { readonly createdAt: string; readonly rotatedAt: string; readonly previousUntil?: string | undefined }
): SecretInfo => ({
  createdAt: row.createdAt,
  rotatedAt: row.rotatedAt,
  previousValidUntil: row.previousUntil !== undefined && Date.parse(row.previousUntil) > Date.now()
    ? row.previousUntil
    : null
})

export const WebhooksLive = Layer.scoped(
  Webhooks,
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const settings = config.webhooks ?? defaultWebhookSettings
    const authOff = config.auth.jwt === undefined
    const store = yield* makeWebhookStore
    const running = yield* FiberSet.make()
    const slots = yield* makeDeliverySlots(MAX_IN_FLIGHT, settings.maxInFlightPerOwner)

    /** The secrets that sign an owner's deliveries now: the current one, and the previous one in its grace. */
    const signingSecrets = (owner: string) =>
      Effect.gen(function*() {
        if (owner.startsWith(SYSTEM_USER_PREFIX)) {
          return settings.systemSecret === undefined
            ? []
            : [settings.systemSecret]
        }
        const row = yield* store.secretOf(authOff ? "" : owner)
        if (Option.isNone(row)) return []
        const { previous, previousUntil, secret } = row.value
        return previous !== undefined && previousUntil !== undefined && Date.parse(previousUntil) > Date.now()
          ? [secret, previous]
          : [secret]
      })

    /** One attempt of a taken delivery, recorded (unless a later claimer took it meanwhile). */
    const deliver = (delivery: Delivery) =>
      Effect.gen(function*() {
        const secrets = yield* signingSecrets(delivery.owner)
        const body = bodyOf(delivery)
        const outcome = secrets.length === 0
          ? {
            _tag: "Failed",
            error: "no signing secret for the execution's owner (POST /webhooks/secret)",
            detail: ""
          } as const
          : yield* postWebhook(
            delivery.url,
            body,
            signatureHeaders(secrets, delivery.id, Math.floor(Date.now() / 1000), body),
            settings
          )
        const code = outcome._tag === "Answered" ? outcome.status : null
        let recorded: AttemptRecord
        if (outcome._tag === "Answered" && outcome.status >= 200 && outcome.status < 300) {
          recorded = { status: "delivered", code: outcome.status }
        } else {
          const error = outcome._tag === "Answered" ? `http ${outcome.status}` : outcome.error
          const retryAt = Date.now() + backoffAfter(settings, delivery.attempts)
          recorded = outcome._tag === "Refused" || retryAt > Date.parse(delivery.createdAt) + settings.retryWindowMs
            ? {
              status: "failed",
              code,
              error: outcome._tag === "Refused"
                ? `refused: ${error}`
                : `gave up after ${delivery.attempts} attempts: ${error}`
            }
            : { status: "pending", code, error, retryAt: new Date(retryAt).toISOString() }
        }
        yield* Effect.annotateCurrentSpan({
          "webhook.outcome": recorded.status === "pending" ? "retry" : recorded.status,
          ...(code === null ? {} : { "http.response.status_code": code })
        })
        if (yield* store.record(delivery, recorded)) {
          yield* countWebhookDelivery(recorded.status === "pending" ? "retry" : recorded.status)
          if (recorded.status === "pending") yield* dueWork.parked(WEBHOOK_DELIVERY_KIND, Date.parse(recorded.retryAt))
          if (recorded.status !== "delivered") {
            const detail = outcome._tag === "Answered" || outcome.detail === "" ? "" : ` (${outcome.detail})`
            yield* Effect.logWarning(
              `webhook delivery ${
                recorded.status === "failed" ? "failed" : "will be retried"
              }: ${recorded.error}${detail}`
            ).pipe(
              Effect.annotateLogs({
                deliveryId: delivery.id,
                executionId: delivery.executionId,
                url: redactUrl(delivery.url)
              })
            )
          }
        }
      }).pipe(
        Effect.withSpan("webhook.deliver", {
          kind: "client",
          root: true,
          captureStackTrace: false,
          attributes: {
            "webhook.delivery_id": delivery.id,
            "webhook.attempt": delivery.attempts,
            "webhook.event": delivery.event,
            "execution.id": delivery.executionId,
            "entity.type": "workflow",
            "entity.id": delivery.workflowId,
            "url.full": redactUrl(delivery.url),
            "http.request.method": "POST"
          }
        })
      )

    const lifecycle = yield* Effect.serviceOption(Lifecycle)
    const leaving = Option.match(lifecycle, { onNone: () => Effect.succeed(false), onSome: (l) => l.draining })
    const dueWork = yield* DueWork
    yield* dueWork.register<Delivery>({
      name: WEBHOOK_DELIVERY_KIND,
      nextDue: store.nextDue,
      claimDue: (limit) =>
        Effect.gen(function*() {
          if (yield* leaving) return []
          return yield* slots.take((share) => store.claimDue(Math.min(limit, share.limit), CLAIM_LEASE_MS, share))
        }),
      handle: (delivery) =>
        Effect.asVoid(FiberSet.run(running, Effect.ensuring(deliver(delivery), slots.release(delivery.owner))))
    })

    const viewOf = (delivery: Delivery): WebhookDeliveryView => ({
      id: delivery.id,
      executionId: delivery.executionId,
      url: redactUrl(delivery.url),
      event: delivery.event,
      status: delivery.status,
      attempts: delivery.attempts,
      nextAttemptAt: delivery.status === "pending" ? delivery.nextAttemptAt : null,
      lastStatusCode: delivery.lastStatusCode ?? null,
      lastError: delivery.lastError ?? null,
      truncated: delivery.truncated,
      createdAt: delivery.createdAt,
      updatedAt: delivery.updatedAt
    })

    return Webhooks.of({
      checkStart: Effect.fn("Webhooks.checkStart")(function*(url: string, caller: Caller) {
        const checked = checkWebhookUrl(url, settings)
        if ("problem" in checked) return yield* new BadRequest({ message: checked.problem })
        if ((yield* signingSecrets(ownerOf(caller))).length === 0) {
          return yield* new BadRequest({
            message: "webhook: no signing secret yet: make one with POST /webhooks/secret first"
          })
        }
      }),
      rotateSecret: Effect.fn("Webhooks.rotateSecret")(function*(caller: Caller) {
        const owner = ownerOf(caller)
        const secret = newSecret()
        yield* store.rotate(owner, secret, new Date(Date.now() + settings.secretGraceMs).toISOString())
        const row = yield* store.secretOf(owner)
        const info = Option.match(row, {
          onNone: () => ({ createdAt: "", rotatedAt: "", previousValidUntil: null }),
          onSome: infoOf
        })
        yield* Effect.logInfo("webhook signing secret rotated")
        return { ...info, secret: Redacted.value(secret) }
      }),
      secretInfo: Effect.fn("Webhooks.secretInfo")(function*(caller: Caller) {
        const row = yield* store.secretOf(ownerOf(caller))
        if (Option.isNone(row)) {
          return yield* new NotFound({ message: "No webhook signing secret yet: make one with POST /webhooks/secret" })
        }
        return infoOf(row.value)
      }),
      deliveries: Effect.fn("Webhooks.deliveries")(
        function*(workflowId: string, executionId: string, visibility: Visibility) {
          const found = yield* store.executionOwner(executionId)
          if (
            Option.isNone(found) || found.value.workflowId !== workflowId || !canSee(visibility, found.value.userId)
          ) {
            return yield* NotFound.of("Execution", executionId)
          }
          return (yield* store.ofExecution(executionId, DELIVERIES_LISTED)).map(viewOf)
        }
      )
    })
  })
)
