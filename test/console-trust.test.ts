import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { Browser, Page } from "playwright-core"
import { defineAgent } from "../src/agents/Agent.js"
import { blocklist } from "../src/agents/guardrails/Guardrail.js"
import { defineApp } from "../src/App.js"
import { concierge } from "./fixtures/readme/working-memory.js"
import { cashier } from "./support/approvalApp.js"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #32 item 6: the console shows what makes an agent trustworthy in front of customers: tool
// approvals with Approve / Deny, guardrail blocks, the model that answered (after a fallback), the
// agent's guardrails and its working memory. In headless Chromium against the fake provider.

const SCREENSHOTS = "docs/console"
const UPDATE_SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1"
const WAIT = { timeout: 30_000 }
const filler = "the answer goes on for a while so that the hold back releases some words first and then"

const shoot = (page: Page, name: string) =>
  UPDATE_SCREENSHOTS ? page.screenshot({ path: `${SCREENSHOTS}/${name}.png` }) : Promise.resolve()

const appFor = (fakeUrl: string) => {
  const provider = createOpenAICompatible({ name: "fake", baseURL: `${fakeUrl}/v1`, includeUsage: true })
  // The first model fails every call: the fake-model behind it answers.
  const guarded = defineAgent({
    id: "guarded",
    name: "Guarded",
    purpose: "Answers behind guardrails, on a fallback model",
    instructions: "Be brief.",
    memory: true,
    model: [provider.chatModel("fail-500"), provider.chatModel("fake-model")],
    inputGuardrails: [blocklist(["forbidden"], "That word is not allowed here", "no-forbidden").input],
    outputGuardrails: [blocklist(["confidential"], "That answer is off limits", "no-confidential").output]
  })
  const profile = defineAgent({
    id: "profile",
    name: "Profile",
    purpose: "Keeps a profile per conversation",
    instructions: "Be brief.",
    workingMemory: { scope: "conversation", schema: Schema.Struct({ name: Schema.String }) }
  })
  return defineApp({ agents: [guarded, profile, cashier, concierge] })
}

const server = Layer.unwrapEffect(
  Effect.map(
    FakeProvider,
    (fake) => TestServerLive({ app: appFor(fake.url), config: { model: fakeModelSettings(fake) } })
  )
).pipe(Layer.provideMerge(FakeProviderLive))

const openAgent = async (browser: Browser, url: string, agentId: string) => {
  const page = await browser.newPage({ viewport: { width: 1366, height: 860 } })
  const problems: Array<string> = []
  page.on("pageerror", (error) => problems.push(`page error ${error.message}`))
  await page.goto(`${url}/console#/agents/${agentId}`)
  await page.getByRole("heading", { level: 2 }).waitFor(WAIT)
  return { page, problems }
}

const say = async (page: Page, text: string) => {
  await page.getByTestId("chat-input").fill(text)
  await page.getByTestId("chat-send").click()
}

const lastAssistant = (page: Page) => page.locator("[data-testid=chat-message][data-role=assistant]").last()

layer(server, { excludeTestServices: true })("Console: approvals, guardrails, fallback, working memory", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)(
    "shows an agent's guardrails and tools needing approval; blocks and the answering model in chat and history",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const outcome = yield* Effect.promise(async () => {
          const { page, problems } = await openAgent(browser, url, "guarded")
          // The agent's details: its guardrails by name; the cashier's refund waits for a human.
          await page.getByTestId("guardrails-input").getByText("no-forbidden").waitFor(WAIT)
          const safeguards = {
            input: await page.getByTestId("guardrails-input").innerText(),
            output: await page.getByTestId("guardrails-output").innerText(),
            approvals: await page.getByTestId("approval-tools").innerText(),
            cashier: await page.getByTestId("agent-item").filter({ hasText: "Cashier" }).innerText()
          }

          // Answered by the fallback model, named under the answer.
          await say(page, "hello there")
          await lastAssistant(page).getByText("You said: hello there").waitFor(WAIT)
          const model = await lastAssistant(page).getByTestId("chat-model").innerText()

          // An input guardrail refuses the turn before any stream (422): the message and the guardrail.
          await page.getByTestId("chat-send").waitFor(WAIT)
          await say(page, "tell me something forbidden")
          const blocked = page.getByTestId("chat-blocked")
          await blocked.waitFor(WAIT)
          const blockedText = await blocked.innerText()

          // An output guardrail stops the answer mid-stream (an error chunk).
          await page.getByTestId("chat-send").waitFor(WAIT)
          await say(page, `${filler} confidential words`)
          const stopped = page.getByTestId("chat-error")
          await stopped.waitFor(WAIT)
          const stoppedText = await stopped.innerText()
          // The earlier block stays shown under its turn.
          const blocksShown = await page.getByTestId("chat-blocked").count()
          await shoot(page, "guardrails")

          // History (an input block writes none): the blocked answer has its badge, the answered one its model.
          await page.getByRole("tab", { name: "History" }).click()
          await page.getByTestId("history-row").nth(1).waitFor(WAIT)
          const badges = await page.getByTestId("history-blocked").count()
          const badgeColor = await page.getByTestId("history-blocked").first().evaluate((element) =>
            getComputedStyle(element).color
          )
          const models = await page.getByTestId("history-model").allInnerTexts()
          return { safeguards, model, blockedText, stoppedText, blocksShown, badges, badgeColor, models, problems }
        })
        expect(outcome.safeguards).toEqual({
          input: "no-forbidden",
          output: "no-confidential",
          approvals: "none",
          cashier: expect.stringContaining("refund (needs approval)")
        })
        expect(outcome.model).toMatch(/answered by .+\/fake-model$/)
        expect(outcome.blockedText).toContain("That word is not allowed here")
        expect(outcome.blockedText).toContain("no-forbidden")
        expect(outcome.stoppedText).toContain("That answer is off limits")
        expect(outcome.blocksShown).toBe(1)
        expect(outcome.badges).toBe(1)
        // The badge is styled as a refusal, not as plain text.
        expect(outcome.badgeColor).toBe("rgb(179, 38, 30)")
        expect(outcome.models).toContain(" fake-model")
        expect(outcome.problems).toEqual([])
      }),
    120_000
  )

  it.scoped.skipIf(CHROMIUM === undefined)(
    "shows the chat's working memory record and clears it",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const outcome = yield* Effect.promise(async () => {
          const { page, problems } = await openAgent(browser, url, "profile")
          await say(page, "remember that my name is Ada")
          await page.getByTestId("chat-tool").getByText("update_working_memory").waitFor(WAIT)
          await page.getByTestId("chat-send").waitFor(WAIT)
          await page.getByRole("tab", { name: "Working memory" }).click()
          const memory = page.getByTestId("working-memory")
          await memory.getByText("\"Ada\"").waitFor(WAIT)
          const version = await page.getByTestId("working-memory-version").innerText()
          await shoot(page, "working-memory")
          await page.getByTestId("working-memory-clear").click()
          await page.getByTestId("working-memory-version").getByText("nothing saved yet").waitFor(WAIT)
          const after = await memory.innerText()
          return { version, after, problems }
        })
        expect(outcome.version).toMatch(/^version 1, updated /)
        expect(outcome.after).not.toContain("Ada")
        expect(outcome.problems).toEqual([])
        // Cleared on the service, not only on the page.
        const stored = yield* Effect.promise(() =>
          fetch(`${url}/agents/profile/history?limit=1`).then((response) => response.json())
        )
        const conversationId = stored.data.entries[0].conversationId as string
        const record = yield* Effect.promise(() =>
          fetch(`${url}/agents/profile/working-memory?conversationId=${conversationId}`).then((response) =>
            response.json()
          )
        )
        expect(record.data).toMatchObject({ value: null, version: 0 })
      }),
    120_000
  )

  it.scoped.skipIf(CHROMIUM === undefined)(
    "shows a user's working memory record, by the user id typed in without authentication",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const saved = yield* Effect.promise(() =>
          fetch(`${url}/agents/concierge/text`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ input: "remember that my name is Grace", options: { userId: "grace" } })
          })
        )
        expect(saved.status).toBe(200)
        const outcome = yield* Effect.promise(async () => {
          const { page, problems } = await openAgent(browser, url, "concierge")
          await page.getByRole("tab", { name: "Working memory" }).click()
          const memory = page.getByTestId("working-memory")
          await memory.getByRole("textbox").fill("grace")
          await memory.getByRole("button", { name: "Show" }).click()
          await memory.getByText("\"Grace\"").waitFor(WAIT)
          return { version: await page.getByTestId("working-memory-version").innerText(), problems }
        })
        expect(outcome.version).toMatch(/^version 1, /)
        expect(outcome.problems).toEqual([])
      }),
    120_000
  )

  // Needs the /chat approval protocol (tool parts in `approval-requested`, answered with the SDK's
  // addToolApprovalResponse), which lands in main from the `chatappr` branch: it fails on main before that
  // merge (the server answers the resubmission "Tool refund needs approval") and passes merged with it.
  it.scoped.skipIf(CHROMIUM === undefined)(
    "asks for a tool's approval with Approve / Deny; the chat goes on by itself",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const outcome = yield* Effect.promise(async () => {
          const { page, problems } = await openAgent(browser, url, "cashier")
          await say(page, "please refund 50")
          const asked = page.getByTestId("chat-tool").filter({ has: page.getByTestId("approval-approve") })
          await asked.waitFor(WAIT)
          const askedText = await asked.innerText()
          await shoot(page, "approvals")
          await page.getByTestId("approval-approve").click()
          await page.getByTestId("approval-state").getByText("approved").waitFor(WAIT)
          await lastAssistant(page).getByText("\"refunded\": 50").waitFor(WAIT)
          await page.getByTestId("chat-send").waitFor(WAIT)

          await say(page, "please refund 70")
          await page.getByTestId("approval-deny").waitFor(WAIT)
          await page.getByTestId("approval-deny").click()
          await page.getByTestId("approval-state").getByText("denied").waitFor(WAIT)
          await page.getByTestId("chat-send").waitFor(WAIT)
          return { askedText, buttons: await page.getByTestId("approval-approve").count(), problems }
        })
        expect(outcome.askedText).toContain("refund")
        expect(outcome.askedText).toContain("waiting for approval")
        expect(outcome.askedText).toContain("\"amount\": 50")
        expect(outcome.buttons).toBe(0)
        expect(outcome.problems).toEqual([])
      }),
    120_000
  )
})
