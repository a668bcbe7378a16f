// agent-tray plugin for OpenCode: written by `agent-tray install --opencode`, removed by
// `agent-tray uninstall --opencode`; edits are overwritten by the next install.
// It forwards the session events Agent Tray shows (no prompt, command or reply text) to
// `agent-tray hook --agent opencode`, with this process's id and folder. It never waits for
// the hook and never throws: OpenCode runs exactly as it would without it.
import { spawn } from "node:child_process";

const BIN = __AGENT_TRAY_BIN__;
const WANTED = new Set(__FORWARDED__);

function pick(p) {
  const out = {};
  if (typeof p.sessionID === "string") out.sessionID = p.sessionID;
  if (p.info && typeof p.info === "object") {
    const { id, directory, title, parentID } = p.info;
    out.info = { id, directory, title, parentID };
  }
  if (p.status && typeof p.status === "object") {
    const { type, attempt, message } = p.status;
    out.status = { type, attempt, message };
  }
  for (const k of ["id", "requestID", "permission", "reply"]) {
    if (typeof p[k] === "string") out[k] = p[k];
  }
  if (p.error && typeof p.error === "object") {
    const message = p.error.data && typeof p.error.data.message === "string" ? p.error.data.message : undefined;
    out.error = { name: p.error.name, data: { message } };
  }
  return out;
}

export const AgentTray = async ({ directory }) => ({
  event: async ({ event }) => {
    try {
      if (!event || !WANTED.has(event.type)) return;
      const line = JSON.stringify({
        v: 1,
        pid: process.pid,
        directory,
        ts: Date.now(),
        type: event.type,
        properties: pick(event.properties || {}),
      });
      const child = spawn(BIN, ["hook", "--agent", "opencode"], { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", () => {});
      child.stdin.on("error", () => {});
      child.stdin.end(line);
      child.unref();
    } catch (_) {
      // never let the tray break the agent
    }
  },
});
