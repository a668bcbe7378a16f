// An agent's name as the window shows it: its display name in its own colour. Both come from
// the core's catalogue of agents (AGENTS, generated into bindings.ts, typed by the generated
// `Agent` union of ids), so an agent added there needs nothing here. The colour is set through
// the CSSOM (the CSP allows no inline style).
import { AGENTS, type Agent, type AgentInfo } from "./bindings";

const infoOf = (id: string): AgentInfo | undefined => AGENTS.find((a) => a.agent === id);

export const agentName = (agent: Agent): string => infoOf(agent)?.name ?? agent;

/** The name for an agent id kept in the history, which may be one this version no longer knows. */
export const storedAgentName = (id: string): string => infoOf(id)?.name ?? id;

export function agentBadge(agent: Agent): HTMLSpanElement {
  const span = document.createElement("span");
  span.className = `agent agent-${agent}`;
  span.textContent = agentName(agent);
  const info = infoOf(agent);
  if (info?.colour) {
    span.style.color = info.colour;
    // The icon (style.css: `.agent[data-monogram]::before`) is drawn in the agent's colour; kept
    // out of the text so the name reads and copies as it is.
    span.style.setProperty("--agent-colour", info.colour);
  }
  if (info?.monogram) span.dataset.monogram = info.monogram;
  return span;
}
