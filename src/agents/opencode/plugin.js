// agent-tray plugin for __PRODUCT__: written by `agent-tray install --__AGENT__`, removed by
// `agent-tray uninstall --__AGENT__`; edits are overwritten by the next install.
// It forwards the session events Agent Tray shows (no prompt or reply text) to
// `agent-tray hook --agent __AGENT__`, with this process's id and folder. It never waits for
// the hook and never throws: __PRODUCT__ runs exactly as it would without it.
// A permission request also carries what it asks (the command, the file), and a question its
// questions and options, so the user can answer it from the tray: that hook prints the answer,
// if one comes, and this plugin gives it to OpenCode's own API. OpenCode's dialog stays usable
// meanwhile; the first answer wins, and an answer in the terminal ends the hook's wait.
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

// What a permission request asks, as the user reads it before answering.
function asked(p, out) {
  const strings = (a) => (Array.isArray(a) ? a.filter((x) => typeof x === "string").slice(0, 64) : undefined);
  out.patterns = strings(p.patterns);
  out.always = strings(p.always);
  // "always" grants OpenCode's whole list: say when what is forwarded is not all of it.
  if (Array.isArray(p.always)) out.alwaysWhole = out.always.length === p.always.length;
  if (p.metadata && typeof p.metadata === "object") {
    const m = {};
    for (const k of ["command", "filepath", "filePath", "path", "url", "description", "diff"]) {
      if (typeof p.metadata[k] === "string") m[k] = p.metadata[k];
    }
    out.metadata = m;
  }
  if (p.tool && typeof p.tool.callID === "string") out.tool = { callID: p.tool.callID };
}

// What a question asks (its questions, their options), bounded, as the user reads it.
function questions(p, out) {
  const text = (x) => (typeof x === "string" ? x : undefined);
  if (!Array.isArray(p.questions)) return;
  out.questions = p.questions.slice(0, 16).map((q) => ({
    question: text(q && q.question),
    header: text(q && q.header),
    multiple: !!(q && q.multiple),
    custom: q && typeof q.custom === "boolean" ? q.custom : undefined,
    options: Array.isArray(q && q.options)
      ? q.options.slice(0, 32).map((o) => ({ label: text(o && o.label), description: text(o && o.description) }))
      : [],
  }));
  out.questionsWhole = p.questions.length <= 16 && p.questions.every((q) => !q || !Array.isArray(q.options) || q.options.length <= 32);
  if (p.tool && typeof p.tool.callID === "string") out.tool = { callID: p.tool.callID };
}

// Requests still waiting for the user, by session, then by request id: OpenCode may ask several
// at once (parallel tool calls) and they are answered one by one, by id. Only this process sees
// every ask and reply in order (each event runs a hook process of its own), so the pairing is
// done here: a reply says whether its id was open (`known`) and which requests stay open
// (`pending`, oldest first). An idle or deleted session has none left.
const OPEN = new Map();
const ASKS = { "permission.asked": "permission", "question.asked": "question" };
const REPLIES = new Set(["permission.replied", "question.replied", "question.rejected"]);
const MAX_OPEN = 64;

function pair(type, p, line) {
  const sid = p.sessionID;
  if (typeof sid !== "string") return;
  let open = OPEN.get(sid);
  if (ASKS[type] && typeof p.id === "string") {
    if (!open) OPEN.set(sid, (open = new Map()));
    open.delete(p.id);
    open.set(p.id, { type: ASKS[type], permission: typeof p.permission === "string" ? p.permission : undefined });
    if (open.size > MAX_OPEN) open.delete(open.keys().next().value);
  }
  if (REPLIES.has(type)) {
    line.known = !!open && typeof p.requestID === "string" && open.delete(p.requestID);
  }
  const idle = type === "session.idle" || type === "session.deleted" || (type === "session.status" && p.status && p.status.type === "idle");
  if (idle) open = undefined;
  if (ASKS[type] || REPLIES.has(type)) line.pending = open ? [...open.values()] : [];
  if (!open || open.size === 0) OPEN.delete(sid);
}

// Hooks waiting for an answer from the tray, by request id.
const WAITING = new Map();

function stopWaiting(id) {
  const child = WAITING.get(id);
  if (!child) return;
  WAITING.delete(id);
  try { child.kill(); } catch (_) {}
}

// Gives the tray's answer to a question to OpenCode: its server's question routes, through the
// plugin's own client (its v1 SDK has no question namespace; the raw call reaches the server in
// process, as the TUI's own answer does: OpenCode 1.18.33).
async function replyQuestion(client, id, answer) {
  const raw = client && client._client;
  if (!raw || typeof raw.post !== "function") return;
  if (Array.isArray(answer.answers)) {
    const answers = answer.answers.map((a) => (Array.isArray(a) ? a.filter((x) => typeof x === "string") : []));
    await raw.post({ url: "/question/{requestID}/reply", path: { requestID: id }, body: { answers } });
  } else if (answer.reply === "reject") {
    await raw.post({ url: "/question/{requestID}/reject", path: { requestID: id } });
  }
}

// Gives the tray's answer to OpenCode: the API this version has, else the newer one.
async function reply(client, sessionID, id, answer, kind) {
  if (kind === "question") return replyQuestion(client, id, answer);
  if (!client || (answer.reply !== "once" && answer.reply !== "always" && answer.reply !== "reject")) return;
  if (typeof client.postSessionIdPermissionsPermissionId === "function") {
    await client.postSessionIdPermissionsPermissionId({ path: { id: sessionID, permissionID: id }, body: { response: answer.reply } });
  } else if (client.permission && typeof client.permission.reply === "function") {
    await client.permission.reply({ requestID: id, reply: answer.reply, message: answer.message });
  }
}

function askTray(client, text, sessionID, id, kind) {
  const child = spawn(BIN, ["hook", "--agent", "__AGENT__"], { stdio: ["pipe", "pipe", "ignore"] });
  child.on("error", () => {});
  child.stdin.on("error", () => {});
  WAITING.set(id, child);
  if (WAITING.size > MAX_OPEN) stopWaiting(WAITING.keys().next().value);
  let out = "";
  child.stdout.on("data", (d) => { if (out.length < 4096) out += d; });
  child.on("close", () => {
    if (WAITING.get(id) !== child) return; // answered in the terminal, or replaced
    WAITING.delete(id);
    let answer;
    try { answer = JSON.parse(out.trim().split("\n").pop() || "null"); } catch (_) { return; }
    if (answer && typeof answer === "object") reply(client, sessionID, id, answer, kind).catch(() => {});
  });
  child.stdin.end(text);
}

// The way in for `agent-tray send` and `stop`: one relay per OpenCode process (`agent-tray
// inbox`, which finds the engine again after a restart and ends with this process), started
// with the plugin. Each order it prints is carried out through OpenCode's own server routes
// (`prompt_async`, `abort`) by the plugin's client, in process, as the TUI's own prompt is, and
// answered on its standard input, in order. A text is a text part: OpenCode's commands and
// shell lines have routes of their own, so a leading `/` or `!` reaches the model as words.
function openInbox(client) {
  let child;
  try {
    child = spawn(BIN, ["inbox", "--agent", "__AGENT__", "--pid", String(process.pid)], { stdio: ["pipe", "pipe", "ignore"] });
  } catch (_) {
    return;
  }
  child.on("error", () => {});
  child.stdin.on("error", () => {});
  let buf = "";
  let queue = Promise.resolve();
  child.stdout.on("data", (d) => {
    buf += d;
    if (buf.length > 1 << 20) buf = "";
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      queue = queue
        .then(() => carryOut(client, line))
        .then((done) => { try { child.stdin.write(JSON.stringify(done) + "\n"); } catch (_) {} })
        .catch(() => {});
    }
  });
  // Never keeps OpenCode running: the relay ends when this process does.
  try { child.unref(); child.stdout.unref(); child.stdin.unref(); } catch (_) {}
}

async function carryOut(client, line) {
  let order;
  try { order = JSON.parse(line); } catch (_) { return { seq: 0, ok: false, error: "an unreadable order" }; }
  const seq = typeof order.seq === "number" ? order.seq : 0;
  const id = order.session_id;
  const raw = client && client._client;
  if (!raw || typeof raw.post !== "function" || typeof id !== "string") {
    return { seq, ok: false, error: "this __PRODUCT__'s plugin client cannot reach its server" };
  }
  try {
    let r;
    if (order.order === "send" && order.prompt && typeof order.prompt.text === "string") {
      if (order.prompt.command) {
        return { seq, ok: false, error: "__PRODUCT__'s commands are run from its terminal; nothing was sent" };
      }
      r = await raw.post({ url: "/session/{id}/prompt_async", path: { id }, body: { parts: [{ type: "text", text: order.prompt.text }] } });
    } else if (order.order === "stop") {
      r = await raw.post({ url: "/session/{id}/abort", path: { id } });
    } else {
      return { seq, ok: false, error: "an order this plugin does not know" };
    }
    if (r && r.error) return { seq, ok: false, error: String(JSON.stringify(r.error)).slice(0, 300) };
    return { seq, ok: true };
  } catch (e) {
    return { seq, ok: false, error: String((e && e.message) || e).slice(0, 300) };
  }
}

export const AgentTray = async ({ directory, client }) => {
  try { openInbox(client); } catch (_) {}
  return {
  event: async ({ event }) => {
    try {
      if (!event || !WANTED.has(event.type)) return;
      const props = event.properties || {};
      const line = {
        v: 1,
        pid: process.pid,
        directory,
        ts: Date.now(),
        type: event.type,
        properties: pick(props),
      };
      pair(event.type, props, line);
      // Answered anywhere else (the terminal, or the tray through us): that wait is over.
      if (REPLIES.has(event.type) && typeof props.requestID === "string") stopWaiting(props.requestID);
      if (event.type === "permission.asked" && typeof props.id === "string" && typeof props.sessionID === "string") {
        asked(props, line.properties);
        askTray(client, JSON.stringify(line), props.sessionID, props.id, "permission");
        return;
      }
      if (event.type === "question.asked" && typeof props.id === "string" && typeof props.sessionID === "string") {
        questions(props, line.properties);
        askTray(client, JSON.stringify(line), props.sessionID, props.id, "question");
        return;
      }
      const text = JSON.stringify(line);
      const child = spawn(BIN, ["hook", "--agent", "__AGENT__"], { stdio: ["pipe", "ignore", "ignore"] });
      child.on("error", () => {});
      child.stdin.on("error", () => {});
      child.stdin.end(text);
      child.unref();
    } catch (_) {
      // never let the tray break the agent
    }
  },
};
};
