import { expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { mkdirSync, readdirSync, statSync } from "node:fs"
import type { Browser, Page } from "playwright-core"
import { CHROMIUM, launchChromium } from "./support/chromium.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

if (CHROMIUM === undefined) {
  console.warn(
    "SKIPPED console browser tests: no Chromium at /usr/bin/chromium (install Debian's chromium to run them)"
  )
}

const SCREENSHOTS = "docs/console"
/** The README's screenshots are tracked: rewritten only when asked (UPDATE_SCREENSHOTS=1). */
const UPDATE_SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1"
const XSS = `<img src=x onerror="window.__xss = 1">`
const WAIT = { timeout: 30_000 }

/** A page of the console with what it must never do recorded: foreign requests, script errors, CSP violations. */
const openConsole = async (browser: Browser, url: string) => {
  const page = await browser.newPage({ viewport: { width: 1366, height: 860 } })
  const problems: Array<string> = []
  page.on("request", (request) => {
    if (!request.url().startsWith(url) && !request.url().startsWith("data:")) {
      problems.push(`foreign request ${request.url()}`)
    }
  })
  page.on("pageerror", (error) => problems.push(`page error ${error.message}`))
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy/i.test(message.text())) {
      problems.push(`CSP: ${message.text()}`)
    }
  })
  const response = await page.goto(`${url}/console`)
  return { page, problems, csp: response?.headers()["content-security-policy"] ?? "" }
}

/** Nothing the user, the model or a tool wrote became an element or ran. */
const injected = (page: Page) =>
  page.evaluate(() => ({
    ran: (window as { __xss?: unknown }).__xss !== undefined,
    images: document.querySelectorAll("main img").length
  }))

const shoot = (page: Page, name: string, save: boolean) =>
  save && UPDATE_SCREENSHOTS ? page.screenshot({ path: `${SCREENSHOTS}/${name}.png` }) : Promise.resolve()

/** When each tracked screenshot was last written. */
const screenshotTimes = () =>
  Object.fromEntries(
    readdirSync(SCREENSHOTS).filter((name) => name.endsWith(".png"))
      .map((name) => [name, statSync(`${SCREENSHOTS}/${name}`).mtimeMs])
  )

/**
 * The History tab's table at a viewport width: its width against its card's, and the Tools cell of a
 * call with a tool (its first name's lines and whether the name is clipped).
 */
const historyLayout = async (page: Page, width: number) => {
  await page.setViewportSize({ width, height: 860 })
  return page.evaluate((width) => {
    const table = document.querySelector<HTMLElement>(".history table")!
    const card = table.closest<HTMLElement>(".detail")!
    const padding = parseFloat(getComputedStyle(card).paddingLeft) + parseFloat(getComputedStyle(card).paddingRight)
    const tool = document.querySelector<HTMLElement>("[data-testid=history-tools] li")
    return {
      width,
      fits: table.scrollWidth <= card.clientWidth - padding &&
        table.getBoundingClientRect().right <= card.getBoundingClientRect().right,
      toolLines: tool === null
        ? 0
        : Math.round(tool.getBoundingClientRect().height / parseFloat(getComputedStyle(tool).lineHeight)),
      toolClipped: tool === null || tool.scrollWidth > tool.clientWidth
    }
  }, width)
}

/** Waits until the trace list shows rows, all of `entity` (a list being loaded still shows the previous one). */
const traceRowsAre = (page: Page, entity: string) =>
  page.waitForFunction(
    (entity) => {
      const cells = Array.from(
        document.querySelectorAll("[data-testid=trace-row] td:nth-child(3)"),
        (cell) => cell.textContent
      )
      return cells.length > 0 && cells.every((cell) => cell === entity)
    },
    entity,
    WAIT
  )

/** The log pane: whether it overflows, and whether it is scrolled to its newest line. */
const logPane = (page: Page) =>
  page.getByRole("log").evaluate((pane) => ({
    overflows: pane.scrollHeight > pane.clientHeight,
    atBottom: pane.scrollHeight - pane.scrollTop - pane.clientHeight <= 8,
    scrollTop: pane.scrollTop
  }))

const chatWithAssistant = async (page: Page, save: boolean) => {
  await page.getByTestId("nav-agents").click()
  await page.getByTestId("agent-item").filter({ hasText: "assistant" }).click()
  // Every distinct state the assistant's message is seen in: a streamed answer grows in several.
  await page.evaluate(() => {
    const seen = new Set<string>()
    ;(window as { __assistantStates?: Set<string> }).__assistantStates = seen
    new MutationObserver(() => {
      const messages = document.querySelectorAll("[data-testid=chat-message][data-role=assistant]")
      const last = messages[messages.length - 1]
      if (last !== undefined) seen.add(last.textContent ?? "")
    }).observe(document.body, { subtree: true, childList: true, characterData: true })
  })
  await page.getByTestId("chat-input").fill("Please call get_weather for Paris and tell me the weather there")
  await page.getByTestId("chat-send").click()
  const tool = page.getByTestId("chat-tool").first()
  await tool.waitFor(WAIT)
  const answer = page.locator("[data-testid=chat-message][data-role=assistant]").last()
  await answer.getByText("get_weather returned").waitFor(WAIT)
  await page.getByTestId("chat-send").waitFor(WAIT)
  expect(await tool.innerText()).toContain("get_weather")
  expect(await tool.innerText()).toContain("temperatureC")
  expect(await page.locator("[data-testid=chat-message][data-role=user]").first().innerText()).toContain(
    "get_weather for Paris"
  )
  const states = await page.evaluate(() => (window as { __assistantStates?: Set<string> }).__assistantStates!.size)
  expect(states).toBeGreaterThan(2)

  // The built-in model echoes the message back: both copies must be text.
  await page.getByTestId("chat-input").fill(XSS)
  await page.getByTestId("chat-send").click()
  await page.locator("[data-testid=chat-message][data-role=assistant]").nth(1).getByText("You said: <img").waitFor(WAIT)
  await page.getByTestId("chat-send").waitFor(WAIT)
  expect(await page.locator("[data-testid=chat-message][data-role=user]").nth(1).innerText()).toContain(XSS)
  expect(await injected(page)).toEqual({ ran: false, images: 0 })
  await shoot(page, "agents", save)
  const conversationId = (await page.locator(".chat code").first().innerText()).trim()

  // The agent's history, and from a call to its trace.
  await page.getByRole("tab", { name: "History" }).click()
  await page.getByTestId("history-row").nth(1).waitFor(WAIT)
  expect(await page.getByTestId("history-row").first().innerText()).toContain(conversationId)
  // The calls' inputs as the user's text (the chat sent UI messages), the tools by name, all within the card.
  expect(await page.getByTestId("history-input").allInnerTexts())
    .toEqual([XSS, "Please call get_weather for Paris and tell me the weather there"])
  expect(await page.getByTestId("history-tools").last().innerText()).toBe("get_weather")
  const layouts = [await historyLayout(page, 1400), await historyLayout(page, 800)]
  await page.setViewportSize({ width: 1366, height: 860 })
  expect(layouts).toEqual([1400, 800].map((width) => ({ width, fits: true, toolLines: 1, toolClipped: false })))
  await page.getByTestId("history-row").last().getByRole("button", { name: "Trace" }).click()
  await page.getByTestId("span-bar").first().waitFor(WAIT)
  expect(await page.locator(".waterfall").innerText()).toContain("execute_tool")
  await page.getByTestId("nav-agents").click()
  await page.getByRole("tab", { name: "Chat" }).click()
  return conversationId
}

const runApproval = async (page: Page, save: boolean) => {
  await page.getByTestId("nav-workflows").click()
  await page.getByTestId("workflow-item").filter({ hasText: "approval" }).click()
  // The run form starts from the input schema's first example ({ amount: 250 }).
  const amount = page.locator("[data-testid=workflow-input] input[name=amount]")
  await amount.waitFor(WAIT)
  expect(await amount.inputValue()).toBe("250")
  // Checked against the input schema before anything is sent.
  await page.getByRole("button", { name: "Edit as JSON" }).click()
  await page.locator("[data-testid=workflow-input] textarea").fill(JSON.stringify({ amount: "lots" }))
  await page.getByTestId("workflow-run").click()
  await page.locator("[data-testid=workflow-input] [role=alert]").getByText("input.amount must be a number").waitFor(
    WAIT
  )
  expect(page.url()).toMatch(/#\/workflows\/approval$/)
  await page.getByRole("button", { name: "Edit as form" }).click()
  await page.locator("[data-testid=workflow-input] input[name=amount]").fill("500")
  await page.getByTestId("workflow-run").click()
  await page.getByTestId("execution-status").getByText("suspended").waitFor(WAIT)
  const suspended = page.locator("[data-testid=execution-event][data-type=workflow-suspended]")
  await suspended.waitFor(WAIT)
  expect(await suspended.innerText()).toContain("manager approval required")
  expect(await page.locator("[data-testid=execution-event][data-type=step-complete]").first().innerText()).toMatch(
    /\d+ ms/
  )
  const executionId = decodeURIComponent(page.url().split("/").pop()!)
  // A resume is a person's decision: its form is not pre-filled from the example ({ approved: true }).
  expect(await page.locator("[data-testid=resume-input] input[name=approved]").isChecked()).toBe(false)
  await page.locator("[data-testid=resume-input] input[name=approved]").check()
  await page.getByTestId("resume-submit").click()
  await page.getByTestId("execution-status").getByText("completed").waitFor(WAIT)
  await page.locator("[data-testid=execution-event][data-type=workflow-complete]").waitFor(WAIT)
  expect(await page.locator(".state").innerText()).toContain("\"approved\": true")
  await shoot(page, "workflows", save)

  await page.getByTestId("workflow-item").filter({ hasText: "approval" }).click()
  const row = page.getByTestId("execution-row").filter({ hasText: executionId })
  await row.waitFor(WAIT)
  expect(await row.innerText()).toContain("completed")
  // Filtered by status, a completed execution is not among the suspended ones.
  await page.getByLabel("Status").selectOption("suspended")
  await row.waitFor({ state: "detached", ...WAIT })
  await page.getByLabel("Status").selectOption("completed")
  await row.waitFor(WAIT)

  // Opened again from the table, the execution replays its events.
  await row.click()
  await page.locator("[data-testid=execution-event][data-type=workflow-complete]").waitFor(WAIT)
  // The status is read from the record, which may arrive after the replayed events: wait for it.
  await page.getByTestId("execution-status").filter({ hasText: /^completed$/ }).waitFor(WAIT)
  return executionId
}

const openTrace = async (page: Page, save: boolean) => {
  await page.getByTestId("execution-trace").first().click()
  await page.getByTestId("span-bar").first().waitFor(WAIT)
  await page.locator(".span-name", { hasText: "workflow.step" }).first().waitFor(WAIT)
  expect(await page.getByTestId("span-bar").count()).toBeGreaterThanOrEqual(3)
  await page.locator(".waterfall li", { hasText: "WorkflowEngine.run" }).getByTestId("span-bar").click()
  await page.locator(".span-detail").getByText("entity.type").waitFor(WAIT)
  await shoot(page, "traces", save)
  // An id typed while the list loads, then Refresh (no Enter): the list is that id's.
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  const traceList = /\/observability\/traces\?/
  await page.route(traceList, (route) => held.then(() => route.continue()))
  await page.getByTestId("nav-agents").click()
  await page.getByTestId("nav-traces").click()
  await page.getByLabel("Entity id").fill("approval")
  release()
  await page.getByTestId("trace-row").first().waitFor(WAIT)
  await page.unroute(traceList)
  await page.getByRole("button", { name: "Refresh" }).click()
  await page.waitForURL(/#\/traces\/by\/any\/approval$/, WAIT)
  await traceRowsAre(page, "workflow approval")
  // An id typed, then an entity type chosen: the filter is both.
  await page.getByLabel("Entity id").fill("assistant")
  await page.locator("section .filters select").selectOption("agent")
  await page.waitForURL(/#\/traces\/by\/agent\/assistant$/, WAIT)
  await traceRowsAre(page, "agent assistant")
  // A workflow's traces: every row is that workflow's.
  await page.getByTestId("nav-workflows").click()
  await page.getByTestId("workflow-item").filter({ hasText: "approval" }).click()
  await page.getByRole("link", { name: "its traces" }).click()
  await page.getByTestId("trace-row").first().waitFor(WAIT)
  const entities = await page.getByTestId("trace-row").locator("td:nth-child(3)").allInnerTexts()
  expect(entities.length).toBeGreaterThan(0)
  expect(new Set(entities)).toEqual(new Set(["workflow approval"]))
}

/** Issue #31's example: a loop, a retry, a durable sleep and a poll, run from the console, its timeline nested. */
const runOnboarding = async (page: Page) => {
  await page.getByTestId("nav-workflows").click()
  await page.getByTestId("workflow-item").filter({ hasText: "onboarding" }).click()
  // An input with an array of objects is edited as JSON from the start.
  const editor = page.locator("[data-testid=workflow-input] textarea")
  await editor.or(page.getByRole("button", { name: "Edit as JSON" })).first().waitFor(WAIT)
  if ((await editor.count()) === 0) await page.getByRole("button", { name: "Edit as JSON" }).click()
  const accounts = [{ name: "Ada", email: "ada@example.com" }, { name: "Alan", email: "alan@example.com" }]
  await page.locator("[data-testid=workflow-input] textarea").fill(
    JSON.stringify({ accounts, busyAttempts: 1, waitSeconds: 2 })
  )
  await page.getByTestId("workflow-run").click()
  // Parked by the sleep: running, with its wake time shown, then woken.
  await page.getByTestId("execution-waiting").waitFor(WAIT)
  await page.locator("[data-testid=execution-event][data-type=workflow-complete]").waitFor(WAIT)
  expect(await page.locator("[data-testid=execution-event][data-type=step-retry]").innerText()).toMatch(
    /attempt 1 failed, next in \d+ ms/
  )
  expect(await page.locator("[data-testid=execution-event][data-type=step-sleep]").innerText()).toContain("wakes at")
  const item = page.locator("[data-testid=execution-event][data-type=step-complete][data-path='welcome[1]']")
  expect(await item.innerText()).toContain("welcome[1]")
  // Nested under its step: indented.
  expect(await item.evaluate((element) => getComputedStyle(element).marginLeft)).not.toBe("0px")
  expect(await page.locator("[data-testid=execution-event][data-type=step-complete][data-path^='poll[']").count()).toBe(
    3
  )
}

/** A long wait suspended and then cancelled from the execution's buttons. */
const suspendAndCancel = async (page: Page) => {
  await page.getByTestId("nav-workflows").click()
  await page.getByTestId("workflow-item").filter({ hasText: "slow" }).click()
  await page.locator("[data-testid=workflow-input] input[name=ms]").fill("600000")
  await page.getByTestId("workflow-run").click()
  await page.getByTestId("execution-status").getByText("running").waitFor(WAIT)
  await page.locator("[data-testid=execution-event][data-type=step-start]").waitFor(WAIT)
  await page.getByRole("button", { name: "Suspend" }).click()
  await page.getByTestId("execution-status").getByText("suspended").waitFor(WAIT)
  expect(await page.locator("[data-testid=execution-event][data-type=workflow-suspended]").innerText())
    .toContain("suspended from the console")
  await page.getByTestId("execution-cancel").click()
  await page.getByTestId("execution-status").getByText("cancelled").waitFor(WAIT)
}

/** A workflow input with markup, run from the console's JSON editor; then its audit line arriving live. */
const inputAndLogs = async (page: Page, url: string, headers: Record<string, string>, save: boolean) => {
  await page.getByTestId("nav-workflows").click()
  await page.getByTestId("workflow-item").filter({ hasText: "pipeline" }).click()
  await page.getByRole("button", { name: "Edit as JSON" }).click()
  await page.locator("[data-testid=workflow-input] textarea").fill(JSON.stringify({ text: XSS, n: 1 }))
  await page.getByTestId("workflow-run").click()
  await page.getByTestId("execution-status").getByText("completed").waitFor(WAIT)
  expect(await page.locator(".state").innerText()).toContain("<img src=x")
  expect(await injected(page)).toEqual({ ran: false, images: 0 })

  // A low window, so that the session's lines overflow the log pane.
  await page.setViewportSize({ width: 1366, height: 480 })
  await page.getByTestId("nav-logs").click()
  await page.locator("[role=status]").getByText("live").waitFor(WAIT)
  const marker = `live-${Date.now()}`
  const response = await fetch(`${url}/workflows/pipeline/execute`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ input: { text: `${marker} ${XSS}`, n: 2 } })
  })
  expect(response.status).toBe(200)
  const line = page.getByTestId("log-line").filter({ hasText: marker })
  await line.first().waitFor(WAIT)
  expect(await line.first().innerText()).toContain("<img src=x")
  expect(await injected(page)).toEqual({ ran: false, images: 0 })
  // Opened at the newest line, and following the new ones.
  expect(await logPane(page)).toMatchObject({ overflows: true, atBottom: true })

  // Scrolled up, the pane stays where the user is; back at the bottom, it follows again.
  const logged = async (text: string) => {
    const response = await fetch(`${url}/workflows/pipeline/execute`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ input: { text, n: 1 } })
    })
    expect(response.status).toBe(200)
    await page.getByTestId("log-line").filter({ hasText: text }).first().waitFor({ state: "attached", ...WAIT })
  }
  await page.getByRole("log").hover()
  await page.mouse.wheel(0, -200)
  await page.waitForFunction(
    () => {
      const pane = document.querySelector("[role=log]")!
      return pane.scrollHeight - pane.scrollTop - pane.clientHeight > 40
    },
    undefined,
    WAIT
  )
  const readingAt = (await logPane(page)).scrollTop
  await logged(`reading-${Date.now()}`)
  expect(await logPane(page)).toMatchObject({ atBottom: false, scrollTop: readingAt })
  await page.mouse.wheel(0, 100_000)
  await page.waitForFunction(
    () => {
      const pane = document.querySelector("[role=log]")!
      return pane.scrollHeight - pane.scrollTop - pane.clientHeight <= 8
    },
    undefined,
    WAIT
  )
  await logged(`following-${Date.now()}`)
  expect(await logPane(page)).toMatchObject({ atBottom: true })
  await page.setViewportSize({ width: 1366, height: 860 })
  await shoot(page, "logs", save)

  // Paused, new lines wait (counted) until the tail is resumed.
  await page.getByRole("button", { name: "Pause" }).click()
  const held = `held-${Date.now()}`
  const again = await fetch(`${url}/workflows/pipeline/execute`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ input: { text: held, n: 3 } })
  })
  expect(again.status).toBe(200)
  await page.getByRole("button", { name: /Resume \([1-9]\d* waiting\)/ }).waitFor(WAIT)
  expect(await page.getByTestId("log-line").filter({ hasText: held }).count()).toBe(0)
  await page.getByRole("button", { name: /Resume/ }).click()
  await page.getByTestId("log-line").filter({ hasText: held }).first().waitFor(WAIT)
}

layer(TestServerLive(), { excludeTestServices: true })("Console in headless Chromium", (it) => {
  it.effect("serves a shell naming hashed assets, long-cached and gzipped, all under a strict CSP", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const checked = yield* Effect.promise(async () => {
        const shell = await fetch(`${url}/console`)
        const html = await shell.text()
        const [script] = html.match(/\/console\/assets\/console-[\w-]+\.js/) ?? []
        const asset = await fetch(`${url}${script}`, { headers: { "accept-encoding": "gzip" } })
        const bytes = (await asset.arrayBuffer()).byteLength
        const missing = await fetch(`${url}/console/assets/nothing.js`)
        const traversal = await fetch(`${url}/console/assets/..%2Fmanifest.json`)
        return { shell, html, script, asset, bytes, missing: missing.status, traversal: traversal.status }
      })
      expect(checked.shell.status).toBe(200)
      const csp = checked.shell.headers.get("content-security-policy") ?? ""
      expect(csp).toContain("default-src 'none'")
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("connect-src 'self'")
      expect(csp).not.toMatch(/unsafe|\*|https?:/)
      expect(checked.shell.headers.get("cache-control")).toBe("no-cache")
      expect(checked.html).not.toMatch(/<script>|<style>| style=| on\w+=/)
      expect(checked.script).toBeDefined()
      expect(checked.asset.status).toBe(200)
      expect(checked.asset.headers.get("cache-control")).toContain("immutable")
      expect(checked.asset.headers.get("content-security-policy")).toBe(csp)
      // fetch decodes gzip: the header says what travelled, the body is the script.
      expect(checked.asset.headers.get("content-encoding")).toBe("gzip")
      expect(checked.bytes).toBeGreaterThan(10_000)
      expect(checked.missing).toBe(404)
      expect(checked.traversal).toBe(404)
    }))

  it.scoped.skipIf(CHROMIUM === undefined)(
    "chats, runs and resumes a workflow, shows its trace and live logs",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        mkdirSync(SCREENSHOTS, { recursive: true })
        const screenshotsBefore = screenshotTimes()
        const outcome = yield* Effect.promise(async () => {
          const { csp, page, problems } = await openConsole(browser, url)
          const conversationId = await chatWithAssistant(page, true)
          await runApproval(page, true)
          await openTrace(page, true)
          await suspendAndCancel(page)
          await runOnboarding(page)
          await inputAndLogs(page, url, {}, true)
          return { csp, problems, conversationId }
        })
        expect(outcome.csp).toContain("script-src 'self'")
        expect(outcome.csp).not.toContain("unsafe-inline")
        expect(outcome.problems).toEqual([])
        if (!UPDATE_SCREENSHOTS) expect(screenshotTimes()).toEqual(screenshotsBefore)
        // The chat kept one conversation id, so the service's memory and history hold both calls under it.
        const history = yield* Effect.promise(() =>
          fetch(`${url}/agents/assistant/history?conversationId=${outcome.conversationId}`).then((response) =>
            response.json()
          )
        )
        expect(history.data.pagination.total).toBe(2)
      }),
    180_000
  )
})

const SECRET = "a-long-shared-secret-for-console-tests"
const CONSOLE_KEY = "console-k3y"

layer(
  TestServerLive({
    config: {
      production: true,
      auth: {
        production: true,
        consoleKey: Redacted.make(CONSOLE_KEY),
        jwt: { secret: Redacted.make(SECRET), defaultPrivate: true, publicRoutes: [] }
      }
    }
  }),
  { excludeTestServices: true }
)("Console with JWT and a console key", (it) => {
  it.scoped.skipIf(CHROMIUM === undefined)(
    "asks for the token and key on a 401, then works with them",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const browser = yield* launchChromium
        const token = yield* Effect.promise(() =>
          new SignJWT({ sub: "ada" }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h")
            .sign(new TextEncoder().encode(SECRET))
        )
        const outcome = yield* Effect.promise(async () => {
          const { page, problems } = await openConsole(browser, url)
          await page.getByRole("alert").getByText("401").waitFor(WAIT)
          const before = await page.getByTestId("agent-item").count()
          await page.getByTestId("credentials-token").fill(token)
          await page.getByTestId("credentials-key").fill(CONSOLE_KEY)
          await shoot(page, "credentials", true)
          await page.getByTestId("credentials-save").click()
          await page.getByTestId("agent-item").first().waitFor(WAIT)
          await chatWithAssistant(page, false)
          await runApproval(page, false)
          await openTrace(page, false)
          await inputAndLogs(page, url, { authorization: `Bearer ${token}` }, false)
          return { before, problems }
        })
        expect(outcome.before).toBe(0)
        expect(outcome.problems).toEqual([])
      }),
    180_000
  )
})
