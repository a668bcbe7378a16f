// An agent's name as the window shows it: its display name in its own colour. Both come from
// the agent's adapter in the core (AGENTS, generated into bindings.ts), so an agent added there
// needs nothing here. The colour is set through the CSSOM (the CSP allows no inline style).
import { AGENTS } from "./bindings";

export const agentName = (agent: string): string => AGENTS.find((a) => a.agent === agent)?.name ?? agent;

export function agentBadge(agent: string): HTMLSpanElement {
  const span = document.createElement("span");
  span.className = `agent agent-${agent}`;
  span.textContent = agentName(agent);
  const colour = AGENTS.find((a) => a.agent === agent)?.colour;
  if (colour) span.style.color = colour;
  return span;
}
