import { render } from "preact"
import { Agents } from "./Agents.js"
import { CredentialsPanel } from "./CredentialsPanel.js"
import { Logs } from "./Logs.js"
import { href, useRoute } from "./route.js"
import { Schedules } from "./Schedules.js"
import { Traces } from "./Traces.js"
import { Workflows } from "./Workflows.js"
import "./styles.css"

const SECTIONS = [
  { id: "agents", label: "Agents" },
  { id: "workflows", label: "Workflows" },
  { id: "schedules", label: "Schedules" },
  { id: "traces", label: "Traces" },
  { id: "logs", label: "Logs" }
] as const

const App = () => {
  const [section = "agents", ...rest] = useRoute()
  return (
    <>
      <header class="top">
        <strong>Console</strong>
        <nav aria-label="Sections">
          {SECTIONS.map(({ id, label }) => (
            <a
              key={id}
              href={href(id)}
              data-testid={`nav-${id}`}
              aria-current={section === id ? "page" : undefined}
            >
              {label}
            </a>
          ))}
        </nav>
        <CredentialsPanel />
      </header>
      <main>
        {section === "workflows" ?
          <Workflows path={rest} /> :
          section === "schedules" ?
          <Schedules /> :
          section === "traces" ?
          <Traces path={rest} /> :
          section === "logs" ?
          <Logs /> :
          <Agents path={rest} />}
      </main>
    </>
  )
}

const root = document.getElementById("app")!
root.replaceChildren()
render(<App />, root)
