/** Guardrails plugged into the generation core (generation/plugins.ts): the input's, and the output's on each path. */
import { Effect, type Runtime } from "effect"
import { recordedInput } from "../generation/messages.js"
import type { GuardrailsPlugin } from "../generation/plugins.js"
import { guardedRecord, guardedUserMessage, guardInput, rewrittenInput } from "./input.js"
import { guardedObjectEvents } from "./object.js"
import { guardStream } from "./stream.js"
import { guardedObject, guardedText } from "./whole.js"

export const guardrailsPlugin = (runtime: Runtime.Runtime<never>): GuardrailsPlugin => ({
  input: (agent, call, messages, field, request) =>
    Effect.map(guardInput(agent, call, messages, field), (guarded) => {
      const client = request.clientConversation
      return {
        messages: guarded.messages,
        remembered: client === undefined ? undefined : guardedUserMessage(guarded.messages, client.storesUserMessage),
        recordedInput: guarded.partsRewritten
          ? guardedRecord(guarded, client !== undefined)
          : guarded.rewrites === undefined
          ? undefined
          : rewrittenInput(recordedInput(request), guarded.rewrites)
      }
    }),
  text: guardedText,
  object: guardedObject,
  stream: (agent, call, parent, hooks) => guardStream(agent, call, parent, runtime, hooks),
  objectEvents: guardedObjectEvents
})
