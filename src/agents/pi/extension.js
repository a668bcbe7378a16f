// agent-tray extension for Pi: written by `agent-tray install --pi`, removed by
// `agent-tray uninstall --pi`; edits are overwritten by the next install.
// It forwards the events Agent Tray shows (session start and end, a prompt's run, each tool call
// and result; never a prompt, a reply or a tool's output) to `agent-tray hook --agent pi`, one
// JSON object on its standard input per event. It never waits for the hook and never throws into
// Pi: the hooks run one after another in the background (each event's own process, in order,
// so a tool's result never lands after the end of its run), at most MAX_QUEUED wait (the rest are
// dropped), and a hook still running after HOOK_LIMIT_MS is ended.
import { spawn } from "node:child_process";

const BIN = __AGENT_TRAY_BIN__;
const MAX_QUEUED = 64;
const HOOK_LIMIT_MS = 10000;

const queue = [];
let running = false;

function next() {
  if (running) return;
  const text = queue.shift();
  if (text === undefined) return;
  running = true;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    running = false;
    next();
  };
  try {
    const child = spawn(BIN, ["hook", "--agent", "pi"], { stdio: ["pipe", "ignore", "ignore"] });
    const limit = setTimeout(() => { try { child.kill(); } catch (_) {} finish(); }, HOOK_LIMIT_MS);
    if (limit.unref) limit.unref();
    child.on("error", () => { clearTimeout(limit); finish(); });
    child.on("exit", () => { clearTimeout(limit); finish(); });
    child.stdin.on("error", () => {});
    child.stdin.end(text);
    child.unref();
  } catch (_) {
    finish();
  }
}

function send(name, ctx, extra) {
  try {
    let sessionId, sessionFile, model;
    try { sessionId = ctx.sessionManager.getSessionId(); } catch (_) {}
    try { sessionFile = ctx.sessionManager.getSessionFile(); } catch (_) {}
    try { model = ctx.model && ctx.model.id; } catch (_) {}
    if (typeof sessionId !== "string" || !sessionId) return;
    const line = {
      session_id: sessionId,
      hook_event_name: name,
      cwd: typeof ctx.cwd === "string" ? ctx.cwd : undefined,
      transcript_path: typeof sessionFile === "string" ? sessionFile : undefined,
      model: typeof model === "string" ? model : undefined,
      pi_pid: process.pid,
      ...extra,
    };
    if (queue.length >= MAX_QUEUED) return;
    queue.push(JSON.stringify(line));
    next();
  } catch (_) {
    // never let the tray break the agent
  }
}

// Why the run ended, from its last assistant message: "stop", "length", "toolUse", "error"
// (then its error message, cut short) or "aborted" (Esc).
function ending(messages) {
  try {
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (m && m.role === "assistant") {
        const out = { source: typeof m.stopReason === "string" ? m.stopReason : undefined };
        if (m.stopReason === "error" && typeof m.errorMessage === "string") out.error = m.errorMessage.slice(0, 200);
        return out;
      }
    }
  } catch (_) {}
  return {};
}

export default function (pi) {
  try {
    pi.on("session_start", (event, ctx) => { send("session_start", ctx, { source: event && event.reason }); });
    pi.on("agent_start", (_event, ctx) => { send("agent_start", ctx, {}); });
    pi.on("tool_call", (event, ctx) => { send("tool_call", ctx, { tool_name: event && event.toolName }); });
    pi.on("tool_result", (event, ctx) => {
      send("tool_result", ctx, { tool_name: event && event.toolName, source: event && event.isError ? "error" : "ok" });
    });
    pi.on("agent_end", (event, ctx) => { send("agent_end", ctx, ending((event && event.messages) || [])); });
    pi.on("session_shutdown", (event, ctx) => { send("session_shutdown", ctx, { source: event && event.reason }); });
  } catch (_) {
    // an older Pi without one of these events: the others still report
  }
}
