// The window: assembles the page (the toolbar, the banner, the views and the footer, and the
// settings dialog), renders the snapshot it fetched and keeps it current from typed events.
// Which sessions are listed, their grouping, labels, project names, resume commands, agent names
// and section titles come from Rust (SessionView, and the AGENTS and SECTIONS generated into
// bindings.ts); the views only filter what is shown, render it, and turn keys and clicks into
// commands: the sessions in sessions-view.ts, "Today" in today-view.ts, "History" in
// history-view.ts, the tabs between them in view-tabs.ts.
//
// Ordering: snapshots and events carry the registry's sequence number. A snapshot can be
// computed before an event that reaches the window first; whatever is older than what the
// window shows is dropped, so a stale "working" never replaces a newer "needs you".
//
// Opening: the shell creates the page with the snapshot and the saved state already in it
// (window.__agentTrayBoot), so the first paint waits for no IPC; the listeners and a catch-up
// snapshot follow it.
import "./style.css";
import type { AppSettings, EngineStatus, RemoteLinkStatus, Snapshot, WindowMemory } from "./bindings";
import { el, setText } from "./dom";
import { stampPaint } from "./paint";
import { commands, errorMessage, on } from "./ipc";
import { createHistoryView } from "./history-view";
import { keyOf, SessionsStore, sessionKey } from "./sessions-store";
import { createSessionsView, type Notice } from "./sessions-view";
import { openSettings, type SettingsPage } from "./settings-view";
import { createTodayView } from "./today-view";
import { createViewTabs } from "./view-tabs";

const store = new SessionsStore();

const state = {
  engine: null as EngineStatus | null,
  settings: null as AppSettings | null,
  version: "",
  notice: null as Notice | null,
  remotes: [] as RemoteLinkStatus[],
};

const root = document.getElementById("app") as HTMLElement;

// ---- layout (built once) ----------------------------------------------------------------------
const settingsButton = el("button", { class: "ghost", attrs: { type: "button", id: "open-settings" } }, "Settings");
const banner = el("div", { class: "banner", attrs: { role: "status", id: "banner", hidden: "" } });
const footerText = el("span", { class: "footer-text" });
const settingsPanel = el("dialog", { class: "settings", attrs: { id: "settings" } });

const sessionsView = createSessionsView({
  store,
  notify: (notice) => {
    state.notice = notice;
    renderBanner();
  },
  installHooks: () => void runInstaller(),
  afterRender: () => {
    renderBanner();
    renderFooter();
  },
});
// "Today" and "History" beside the sessions; the filters are the sessions'. A wait on "Today"
// opens its session on "History".
const historyView = createHistoryView(() => tabs.show("history"));
const todayView = createTodayView((sessionId) => historyView.openDetail(sessionId));
const tabs = createViewTabs({
  sessions: { parts: [sessionsView.list, sessionsView.filterInput, sessionsView.agentSelect] },
  today: { parts: [todayView.panel], shown: () => void todayView.load() },
  history: { parts: [historyView.panel], shown: () => void historyView.load() },
});
root.append(
  el("header", { class: "toolbar" }, tabs.tablist, sessionsView.filterInput, sessionsView.agentSelect, settingsButton),
  banner,
  sessionsView.list,
  todayView.panel,
  historyView.panel,
  el("footer", { class: "footer", attrs: { id: "footer" } }, footerText, sessionsView.keysHelp),
  settingsPanel,
);

// ---- rendering (the sessions render themselves, then call these) ------------------------------
function renderFooter(): void {
  const engine = state.engine?.kind === "running" ? `engine on ${state.engine.socket}` : "engine not running";
  // One line per remote that cannot serve (no agent-tray there, a too-old one, not reachable).
  const down = state.remotes.filter((r) => r.state !== "connected" && r.state !== "connecting");
  const remotes = down.map((r) => ` · ${r.name}: ${r.message ?? r.state}`).join("");
  setText(footerText, `Agent Tray ${state.version} · ${engine}${remotes}`);
}

function renderBanner(): void {
  let notice = state.notice;
  if (!notice && state.engine?.kind === "not_running") {
    notice = { kind: "error", text: state.engine.message };
  }
  if (!notice) {
    if (!banner.hidden) {
      banner.hidden = true;
      banner.replaceChildren();
    }
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

// ---- what the user had, kept by the shell --------------------------------------------------------
function restoreMemory(memory: WindowMemory): void {
  sessionsView.restore(memory);
  applyRequests(memory);
}

/// What the tray or an alert asked of the window while it was closed, or while this page was
/// starting (its one-shots: the shell hands each over once).
function applyRequests(memory: WindowMemory): void {
  if (memory.install_report) showInstall(memory.install_report);
  if (memory.open_settings) showSettings();
  if (memory.focus) focusSession(keyOf(memory.focus), memory.focus_reply);
}

/// The user chose this session (by key) in the tray or an alert: show it, and give the list the
/// focus (its reply field: an alert's Reply).
function focusSession(key: string, reply = false): void {
  tabs.show("sessions");
  sessionsView.focusSession(key, reply);
}

// ---- data ---------------------------------------------------------------------------------------
/// Shows a snapshot unless an older one than what is shown (see `SessionsStore`).
function applySnapshot(snap: Snapshot): void {
  if (!store.applySnapshot(snap)) return;
  state.engine = snap.engine;
  state.remotes = snap.remotes ?? [];
  todayView.setLimits(snap.limits ?? []);
  state.settings = snap.settings;
  state.version = snap.version;
}

async function loadSnapshot(): Promise<void> {
  applySnapshot(await commands.getSnapshot());
  sessionsView.render();
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

// ---- the window's keys ------------------------------------------------------------------------
// The list and the filter keep their own keys (sessions-view.ts); these act wherever the focus is.
document.addEventListener("keydown", (event) => {
  if (settingsPanel.open) return; // the dialog handles its own keys (Esc closes it)
  const { filterInput, listbox } = sessionsView;
  const focused = document.activeElement;
  const nothingFocused = focused === null || focused === document.body;
  if (event.key === "Escape") {
    event.preventDefault();
    if (focused === filterInput && filterInput.value) {
      sessionsView.clearFilter();
    } else {
      void commands.hideWindow().catch(() => undefined);
    }
  } else if (event.key === "/" && (nothingFocused || focused === listbox)) {
    event.preventDefault();
    filterInput.focus();
  } else if (nothingFocused && (event.key === "ArrowDown" || event.key === "ArrowUp") && !listbox.hidden) {
    // Nothing has the focus (the window just opened): the arrows go to the list.
    event.preventDefault();
    listbox.focus();
    sessionsView.move(event.key === "ArrowDown" ? 1 : -1);
  }
});

// ---- settings (ui/src/settings-view.ts) -------------------------------------------------------
const settingsPage: SettingsPage = {
  panel: settingsPanel,
  settings: () => state.settings,
  remotes: () => state.remotes,
  reload: loadSnapshot,
  saved: (settings) => {
    state.settings = settings;
  },
  failed: (text) => {
    state.notice = { kind: "error", text };
    renderBanner();
  },
};
const showSettings = (): void => openSettings(settingsPage);
settingsButton.addEventListener("click", showSettings);

// ---- start ------------------------------------------------------------------------------------
async function start(): Promise<void> {
  performance.mark("agent-tray:start");
  // The first paint needs no round trip to the shell: it created the page with the snapshot and
  // the saved state (window.__agentTrayBoot). Each IPC call is a round trip through the shell's
  // main thread, and the first paint used to wait for seven of them, one after another.
  const boot = window.__agentTrayBoot;
  if (boot) {
    applySnapshot(boot.snapshot);
    restoreMemory(boot.memory);
    stampPaint(sessionsView.describeSince);
  }
  // Then the listeners, all at once. An event sent between the snapshot the page started from
  // and the listeners reached nobody: the snapshot fetched after them covers it (it is newer by
  // its sequence number, and rows changed by events since keep what those said).
  await Promise.all([
    on.sessions((e) => {
      sessionsView.applyEvent(e);
      sessionsView.render();
    }),
    on.focus(({ session_id, host, reply }) => focusSession(sessionKey(host, session_id), reply)),
    on.settings((s) => {
      state.settings = s;
      void loadSnapshot();
    }),
    on.openSettings(showSettings),
    on.installResult(showInstall),
    on.limits((windows) => todayView.setLimits(windows)),
  ]);
  performance.mark("agent-tray:listening");
  if (boot) {
    // What was asked of the window while this page started (the tray menu chose a session, say)
    // reached no listener: the shell kept it, and from this call on sends requests as events.
    const [, late] = await Promise.all([loadSnapshot(), commands.getWindowMemory()]);
    applyRequests(late);
    performance.mark("agent-tray:caught-up");
  } else {
    // No boot data (a page loaded on its own): fetch both, at once.
    const [snap, memory] = await Promise.all([commands.getSnapshot(), commands.getWindowMemory()]);
    applySnapshot(snap);
    restoreMemory(memory);
    stampPaint(sessionsView.describeSince);
  }
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  state.notice = { kind: "error", text: `Cannot load sessions: ${errorMessage(error)}` };
  renderBanner();
  document.body.dataset.ready = "error";
});
