// The window: renders the snapshot it fetched once and keeps it current from typed events.
// Grouping, labels, project names and resume commands come from Rust (SessionView); this file
// only filters what is shown, renders it, and turns keys and clicks into commands.
import "./style.css";
import type { Agent, AppSettings, EngineStatus, Section, SessionView } from "./bindings";
import { el } from "./dom";
import { formatElapsed, secondsSince } from "./format";
import { commands, errorMessage, on } from "./ipc";

const SECTIONS: { id: Section; title: string }[] = [
  { id: "needs_you", title: "Needs you" },
  { id: "working", title: "Working" },
  { id: "idle", title: "Idle" },
  { id: "ended", title: "Ended recently" },
];
const AGENT_NAMES: Record<Agent, string> = { claude: "Claude", codex: "Codex" };

const state = {
  sessions: new Map<string, SessionView>(),
  order: [] as string[], // session ids in the order first seen (the snapshot's order, then arrivals)
  engine: null as EngineStatus | null,
  settings: null as AppSettings | null,
  version: "",
  filterText: "",
  filterAgent: "all" as Agent | "all",
  selected: null as string | null,
  notice: null as { kind: "info" | "error"; text: string } | null,
};

const root = document.getElementById("app") as HTMLElement;

// ---- layout (built once) ----------------------------------------------------------------------
const filterInput = el("input", {
  class: "filter",
  attrs: { type: "search", placeholder: "Filter sessions…", "aria-label": "Filter sessions", id: "filter" },
});
const agentSelect = el(
  "select",
  { class: "agent-filter", attrs: { "aria-label": "Agent", id: "agent-filter" } },
  el("option", { attrs: { value: "all" } }, "All agents"),
  el("option", { attrs: { value: "claude" } }, "Claude"),
  el("option", { attrs: { value: "codex" } }, "Codex"),
);
const settingsButton = el("button", { class: "ghost", attrs: { type: "button", id: "open-settings" } }, "Settings");
const banner = el("div", { class: "banner", attrs: { role: "status", id: "banner", hidden: "" } });
const list = el("main", { class: "sessions", attrs: { id: "sessions", "aria-label": "Sessions" } });
const footer = el("footer", { class: "footer", attrs: { id: "footer" } });
const settingsPanel = el("dialog", { class: "settings", attrs: { id: "settings" } });

root.append(
  el("header", { class: "toolbar" }, filterInput, agentSelect, settingsButton),
  banner,
  list,
  footer,
  settingsPanel,
);

// ---- rendering ---------------------------------------------------------------------------------
function visible(): SessionView[] {
  const text = state.filterText.trim().toLowerCase();
  return state.order
    .map((id) => state.sessions.get(id))
    .filter((v): v is SessionView => v !== undefined)
    .filter((v) => state.filterAgent === "all" || v.session.agent === state.filterAgent)
    .filter((v) => {
      if (!text) return true;
      const s = v.session;
      return [v.project, s.cwd, s.branch, s.model, s.title, s.session_id, v.state_label, s.last_tool, s.error, AGENT_NAMES[s.agent]]
        .some((field) => typeof field === "string" && field.toLowerCase().includes(text));
    })
    // Oldest session first within a section, as in the tray menu, so rows do not jump around.
    .sort((a, b) => a.session.started_at.localeCompare(b.session.started_at) || a.session.session_id.localeCompare(b.session.session_id));
}

/// Visible rows in display order (section by section): what the arrow keys walk through.
function displayOrder(): SessionView[] {
  const rows = visible();
  return SECTIONS.flatMap((sec) => rows.filter((v) => v.section === sec.id));
}

function timeText(v: SessionView): string {
  return formatElapsed(secondsSince(v.session.state_since, Date.now()));
}

function row(v: SessionView): HTMLElement {
  const s = v.session;
  const detail = s.error ? `error: ${s.error}` : s.waiting_for ? `waiting for: ${s.waiting_for}` : s.last_tool ? `last tool: ${s.last_tool}` : null;
  const actions = el(
    "div",
    { class: "actions" },
    el("button", { class: "action", attrs: { type: "button", "data-action": "jump", tabindex: "-1" } }, "Jump"),
    el("button", { class: "action", attrs: { type: "button", "data-action": "copy", tabindex: "-1" }, title: v.resume_command }, "Copy resume"),
    s.transcript_path
      ? el("button", { class: "action", attrs: { type: "button", "data-action": "transcript", tabindex: "-1" } }, "Transcript")
      : null,
    v.section === "ended"
      ? el("button", { class: "action", attrs: { type: "button", "data-action": "dismiss", tabindex: "-1" } }, "Dismiss")
      : null,
  );
  const li = el(
    "li",
    {
      class: `row state-${s.state}`,
      attrs: {
        role: "option",
        "data-session-id": s.session_id,
        "data-state": s.state,
        "aria-selected": String(state.selected === s.session_id),
        tabindex: "-1",
      },
    },
    el(
      "div",
      { class: "line" },
      el("span", { class: `agent agent-${s.agent}` }, AGENT_NAMES[s.agent]),
      el("span", { class: "project", title: s.cwd ?? "" }, v.project),
      s.branch ? el("span", { class: "branch" }, s.branch) : null,
      s.model ? el("span", { class: "model" }, s.model) : null,
      el("span", { class: "spacer" }),
      s.subagents > 0 ? el("span", { class: "subagents", title: "running subagents" }, `${s.subagents} subagent${s.subagents === 1 ? "" : "s"}`) : null,
      el("span", { class: `pill pill-${v.section}` }, v.state_label),
      el("span", { class: "time", attrs: { "data-since": s.state_since } }, timeText(v)),
    ),
    el(
      "div",
      { class: "line secondary" },
      s.title ? el("span", { class: "title" }, s.title) : null,
      detail ? el("span", { class: s.error ? "detail error" : "detail" }, detail) : null,
      el("span", { class: "spacer" }),
      actions,
    ),
  );
  return li;
}

function emptyState(): HTMLElement {
  const install = el("button", { class: "primary", attrs: { type: "button", id: "install-hooks" } }, "Install hooks");
  install.addEventListener("click", () => void runInstaller());
  return el(
    "div",
    { class: "empty", attrs: { id: "empty" } },
    el("h2", {}, "No sessions yet"),
    el(
      "p",
      {},
      "Sessions appear here as soon as Claude Code or Codex runs on this machine: their hooks report each session to Agent Tray, and their own session files are watched too.",
    ),
    el("p", {}, "If nothing shows up while an agent runs, install the hooks:"),
    install,
  );
}

function render(): void {
  const rows = visible();
  const sections: HTMLElement[] = [];
  for (const sec of SECTIONS) {
    const inSection = rows.filter((v) => v.section === sec.id);
    if (inSection.length === 0) continue;
    sections.push(
      el(
        "section",
        { class: `section section-${sec.id}`, attrs: { "data-section": sec.id, "aria-label": sec.title } },
        el("h2", {}, sec.title, el("span", { class: "count" }, String(inSection.length))),
        el("ul", { attrs: { role: "listbox", "aria-label": sec.title } }, ...inSection.map(row)),
      ),
    );
  }
  if (state.sessions.size === 0) {
    list.replaceChildren(emptyState());
  } else if (sections.length === 0) {
    list.replaceChildren(el("p", { class: "no-match", attrs: { id: "no-match" } }, "No session matches the filter."));
  } else {
    list.replaceChildren(...sections);
  }
  renderBanner();
  const engine = state.engine?.kind === "running" ? `engine on ${state.engine.socket}` : "engine not running";
  footer.textContent = `Agent Tray ${state.version} · ${engine}`;
}

function renderBanner(): void {
  let notice = state.notice;
  if (!notice && state.engine?.kind === "not_running") {
    notice = { kind: "error", text: state.engine.message };
  }
  if (!notice) {
    banner.hidden = true;
    banner.replaceChildren();
    return;
  }
  banner.hidden = false;
  banner.className = `banner banner-${notice.kind}`;
  const close = el("button", { class: "ghost", attrs: { type: "button", "aria-label": "Close" } }, "×");
  close.addEventListener("click", () => {
    state.notice = null;
    renderBanner();
  });
  banner.replaceChildren(...[el("pre", {}, notice.text), ...(state.notice ? [close] : [])]);
}

function tick(): void {
  for (const node of list.querySelectorAll<HTMLElement>(".time[data-since]")) {
    node.textContent = formatElapsed(secondsSince(node.dataset.since ?? "", Date.now()));
  }
}

// ---- data ---------------------------------------------------------------------------------------
function upsert(v: SessionView): void {
  if (!state.sessions.has(v.session.session_id)) state.order.push(v.session.session_id);
  state.sessions.set(v.session.session_id, v);
}

function remove(id: string): void {
  state.sessions.delete(id);
  state.order = state.order.filter((x) => x !== id);
  if (state.selected === id) state.selected = null;
}

async function loadSnapshot(): Promise<void> {
  const snap = await commands.getSnapshot();
  state.sessions.clear();
  state.order = [];
  for (const v of snap.sessions) upsert(v);
  state.engine = snap.engine;
  state.settings = snap.settings;
  state.version = snap.version;
  render();
}

// ---- selection and keys ---------------------------------------------------------------------
function select(id: string | null, scroll = true): void {
  state.selected = id;
  for (const node of list.querySelectorAll<HTMLElement>(".row")) {
    const on = node.dataset.sessionId === id;
    node.setAttribute("aria-selected", String(on));
    if (on) {
      node.focus({ preventScroll: !scroll });
      if (scroll) node.scrollIntoView({ block: "nearest" });
    }
  }
}

function move(delta: number): void {
  const order = displayOrder();
  if (order.length === 0) return;
  const at = order.findIndex((v) => v.session.session_id === state.selected);
  const next = at < 0 ? (delta > 0 ? 0 : order.length - 1) : Math.min(order.length - 1, Math.max(0, at + delta));
  select(order[next].session.session_id);
}

async function act(action: string, id: string): Promise<void> {
  const v = state.sessions.get(id);
  if (!v) return;
  try {
    if (action === "jump") await commands.jumpToSession(id);
    else if (action === "transcript") await commands.revealTranscript(id);
    else if (action === "dismiss") await commands.dismissSession(id);
    else if (action === "copy") {
      await copyText(v.resume_command);
      state.notice = { kind: "info", text: `Copied: ${v.resume_command}` };
      renderBanner();
    }
  } catch (error) {
    state.notice = { kind: "error", text: errorMessage(error) };
    renderBanner();
  }
}

async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // WebKitGTK may refuse the async clipboard; the selection-based copy works everywhere.
    const area = el("textarea", { attrs: { readonly: "", "aria-hidden": "true" } });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

async function runInstaller(): Promise<void> {
  state.notice = { kind: "info", text: "Installing hooks…" };
  renderBanner();
  try {
    showInstall(await commands.installHooks());
  } catch (error) {
    state.notice = { kind: "error", text: errorMessage(error) };
    renderBanner();
  }
}

function showInstall(report: { ok: boolean; output: string }): void {
  state.notice = { kind: report.ok ? "info" : "error", text: report.output || (report.ok ? "Hooks installed." : "The installer failed.") };
  renderBanner();
}

list.addEventListener("click", (event) => {
  const target = event.target as HTMLElement;
  const rowNode = target.closest<HTMLElement>(".row");
  if (!rowNode?.dataset.sessionId) return;
  const id = rowNode.dataset.sessionId;
  select(id, false);
  const action = target.closest<HTMLElement>("[data-action]")?.dataset.action;
  if (action) void act(action, id);
});

document.addEventListener("keydown", (event) => {
  if (settingsPanel.open) return; // the dialog handles its own keys (Esc closes it)
  const inFilter = document.activeElement === filterInput;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    move(event.key === "ArrowDown" ? 1 : -1);
  } else if (event.key === "Enter" && state.selected && !inFilter) {
    event.preventDefault();
    void act("jump", state.selected);
  } else if (event.key === "Escape") {
    event.preventDefault();
    if (inFilter && filterInput.value) {
      filterInput.value = "";
      state.filterText = "";
      render();
    } else {
      void commands.hideWindow().catch(() => undefined);
    }
  } else if (event.key === "/" && !inFilter) {
    event.preventDefault();
    filterInput.focus();
  }
});

filterInput.addEventListener("input", () => {
  state.filterText = filterInput.value;
  render();
});
agentSelect.addEventListener("change", () => {
  state.filterAgent = agentSelect.value as Agent | "all";
  render();
});

// ---- settings -------------------------------------------------------------------------------
const TOGGLES: { key: keyof AppSettings["notifications"]; label: string }[] = [
  { key: "enabled", label: "Desktop alerts" },
  { key: "process_died", label: "A session's process died" },
  { key: "needs_permission", label: "A session needs permission" },
  { key: "needs_input", label: "A session needs input" },
  { key: "long_turn_finished", label: "A long turn finished" },
  { key: "turn_failed", label: "A turn failed with an API error" },
  { key: "include_subagents", label: "Also for subagents" },
];

/// The session TTL: a whole number of seconds (at least 1), or empty for the engine's default.
function ttlInput(draft: AppSettings): HTMLInputElement {
  const input = el("input", { attrs: { type: "number", min: "1", step: "1", id: "set-ttl", placeholder: "default" } });
  input.value = draft.session_ttl_secs === null ? "" : String(draft.session_ttl_secs);
  input.addEventListener("change", () => {
    const secs = Math.floor(Number(input.value));
    draft.session_ttl_secs = input.value.trim() === "" || !(secs >= 1) ? null : secs;
    input.value = draft.session_ttl_secs === null ? "" : String(draft.session_ttl_secs);
  });
  return input;
}

function openSettings(): void {
  const current = state.settings;
  if (!current) return;
  const draft: AppSettings = structuredClone(current);
  const checkbox = (checked: boolean, onChange: (v: boolean) => void, id: string) => {
    const input = el("input", { attrs: { type: "checkbox", id } });
    input.checked = checked;
    input.addEventListener("change", () => onChange(input.checked));
    return input;
  };
  const number = (value: number, onChange: (v: number) => void, id: string) => {
    const input = el("input", { attrs: { type: "number", min: "0", step: "1", id } });
    input.value = String(value);
    input.addEventListener("change", () => onChange(Math.max(0, Math.floor(Number(input.value) || 0))));
    return input;
  };
  const line = (control: HTMLElement, label: string) => el("label", { class: "setting" }, control, " ", label);
  const save = el("button", { class: "primary", attrs: { type: "button", id: "save-settings" } }, "Save");
  const cancel = el("button", { class: "ghost", attrs: { type: "button" } }, "Cancel");
  save.addEventListener("click", () => {
    commands
      .saveSettings(draft)
      .then(() => {
        state.settings = draft;
        settingsPanel.close();
      })
      .catch((error) => {
        state.notice = { kind: "error", text: errorMessage(error) };
        renderBanner();
      });
  });
  cancel.addEventListener("click", () => settingsPanel.close());
  settingsPanel.replaceChildren(
    el("h2", {}, "Settings"),
    el("fieldset", {}, el("legend", {}, "Alerts"), ...TOGGLES.map((t) =>
      line(checkbox(Boolean(draft.notifications[t.key]), (v) => ((draft.notifications[t.key] as boolean) = v), `set-${t.key}`), t.label),
    ),
      line(number(draft.notifications.long_turn_secs, (v) => (draft.notifications.long_turn_secs = v), "set-long-turn"), "seconds make a turn long"),
      line(number(draft.notifications.cooldown_secs, (v) => (draft.notifications.cooldown_secs = v), "set-cooldown"), "seconds between alerts of one kind per session"),
    ),
    el("fieldset", {}, el("legend", {}, "Agents"), ...(["claude", "codex"] as Agent[]).map((agent) =>
      line(checkbox(draft.agents.includes(agent), (v) => {
        draft.agents = v ? [...new Set([...draft.agents, agent])] : draft.agents.filter((a) => a !== agent);
      }, `set-agent-${agent}`), AGENT_NAMES[agent]),
    )),
    el("fieldset", {}, el("legend", {}, "App"),
      line(checkbox(draft.menu_bar_counts, (v) => (draft.menu_bar_counts = v), "set-counts"), "Counts beside the menu-bar icon (macOS)"),
      line(checkbox(draft.launch_at_login, (v) => (draft.launch_at_login = v), "set-login"), "Launch at login"),
      line(ttlInput(draft), "seconds of silence end a session with no live process (empty: default, 300)"),
    ),
    el("div", { class: "dialog-buttons" }, cancel, save),
  );
  settingsPanel.showModal();
}
settingsButton.addEventListener("click", openSettings);

// ---- start ------------------------------------------------------------------------------------
async function start(): Promise<void> {
  // Listen first, then fetch: a change between the two is applied twice (harmless upsert)
  // rather than lost.
  await on.sessions((e) => {
    if (e.kind === "upsert") upsert(e.view);
    else remove(e.session_id);
    render();
    if (state.selected) select(state.selected, false);
  });
  await on.resync(() => void loadSnapshot());
  await on.focus(({ session_id }) => {
    state.filterText = "";
    filterInput.value = "";
    state.filterAgent = "all";
    agentSelect.value = "all";
    render();
    select(session_id);
  });
  await on.settings((s) => {
    state.settings = s;
    void loadSnapshot();
  });
  await on.openSettings(openSettings);
  await on.installResult(showInstall);
  await loadSnapshot();
  setInterval(tick, 1000);
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  state.notice = { kind: "error", text: `Cannot load sessions: ${errorMessage(error)}` };
  renderBanner();
  document.body.dataset.ready = "error";
});
