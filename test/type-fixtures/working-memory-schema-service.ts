import { Context, Effect, Schema } from "effect"
import { defineAgent } from "../../src/index.js"

// A working memory schema is encoded and decoded with no services: one that needs one does not compile.
class Names
  extends Context.Tag("app/Names")<Names, { readonly normalize: (name: string) => Effect.Effect<string> }>()
{}

const Normalized = Schema.transformOrFail(Schema.String, Schema.String, {
  decode: (name) => Effect.flatMap(Names, (names) => names.normalize(name)),
  encode: (name) => Effect.succeed(name)
})

export const concierge = defineAgent({
  id: "concierge",
  name: "Concierge",
  purpose: "Remembers names",
  instructions: "Greet by name.",
  workingMemory: { scope: "user", schema: Schema.Struct({ name: Normalized }) }
})
