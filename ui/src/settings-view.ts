// The Settings view: alerts, watched agents, the app's options and remotes, edited as one draft
// and saved through one command. The window hands it what it needs as a `SettingsPage` (the
// settings and remotes shown, how to reload them, where to report a failure), so this file holds
// no session state of its own. Agent names and the limits of each number come from the core's
// generated bindings.
import { AGENTS, LIMITS } from "./bindings";
import type { AppSettings, EffectiveChoice, RemoteLinkStatus } from "./bindings";
import { el } from "./dom";
import { commands, errorMessage } from "./ipc";

/// What the Settings view needs from the window.
export interface SettingsPage {
  /// The dialog it fills.
  panel: HTMLDialogElement;
  /// The settings shown (null before the first snapshot).
  settings(): AppSettings | null;
  /// The remote links shown.
  remotes(): RemoteLinkStatus[];
  /// Reloads the snapshot (after a remote was added or removed).
  reload(): Promise<void>;
  /// The draft was saved.
  saved(settings: AppSettings): void;
  /// Saving failed, with the core's message.
  failed(message: string): void;
}

const TOGGLES: { key: keyof AppSettings["notifications"]; label: string }[] = [
  { key: "enabled", label: "Desktop alerts" },
  { key: "process_died", label: "A session's process died" },
  { key: "needs_permission", label: "A session needs permission" },
  { key: "needs_input", label: "A session needs input" },
  { key: "long_turn_finished", label: "A long turn finished" },
  { key: "turn_failed", label: "A turn failed with an API error" },
  { key: "context_nearly_full", label: "A session's context is 90% full" },
  { key: "plan_limit_nearly_used", label: "A plan window is 90% used" },
  { key: "include_subagents", label: "Also for subagents" },
];

/// The session TTL: a whole number of seconds (1 to the core's limit), or empty for the engine's
/// default.
function ttlInput(draft: AppSettings): HTMLInputElement {
  const input = el("input", { attrs: { type: "number", min: "1", max: String(LIMITS.sessionTtlSecsMax), step: "1", id: "set-ttl", placeholder: "default" } });
  input.value = draft.session_ttl_secs === null ? "" : String(draft.session_ttl_secs);
  input.addEventListener("change", () => {
    const secs = Math.floor(Number(input.value));
    draft.session_ttl_secs = input.value.trim() === "" || !(secs >= 1) ? null : Math.min(secs, LIMITS.sessionTtlSecsMax);
    input.value = draft.session_ttl_secs === null ? "" : String(draft.session_ttl_secs);
  });
  return input;
}

/// How long history is kept: whole days from 1 to the core's limit, or empty for the engine's
/// default (the core's limits and default, from the generated bindings).
function historyDaysInput(draft: AppSettings): HTMLInputElement {
  const input = el("input", { attrs: { type: "number", min: "1", max: String(LIMITS.historyDaysMax), step: "1", id: "set-history-days", placeholder: String(LIMITS.historyDaysDefault) } });
  input.value = draft.history_days === null ? "" : String(draft.history_days);
  input.addEventListener("change", () => {
    const days = Math.floor(Number(input.value));
    draft.history_days = input.value.trim() === "" || !(days >= 1) ? null : Math.min(days, LIMITS.historyDaysMax);
    input.value = draft.history_days === null ? "" : String(draft.history_days);
  });
  return input;
}

/// The Remotes part of Settings: the links, a Remove button each, and an Add form. The core
/// checks and writes remotes.json (as `agent-tray remote add/remove`); a refusal shows its message.
function remotesFieldset(page: SettingsPage, status = ""): HTMLElement {
  const redraw = (text: string) => void page.reload().finally(() => document.getElementById("set-remotes")?.replaceWith(remotesFieldset(page, text)));
  const message = el("p", { attrs: { id: "remote-message", role: "status" } }, status);
  const fail = (error: unknown) => {
    message.textContent = errorMessage(error);
    message.className = "error";
  };
  const name = el("input", { attrs: { id: "remote-name", placeholder: "name", "aria-label": "remote name" } });
  const destination = el("input", { attrs: { id: "remote-destination", placeholder: "user@host", "aria-label": "ssh destination" } });
  const add = el("button", { attrs: { type: "button", id: "add-remote" } }, "Add remote");
  add.addEventListener("click", () => {
    commands.addRemote(name.value.trim(), destination.value.trim()).then(() => redraw(`Added ${name.value.trim()}.`), fail);
  });
  const rows = page.remotes().map((r) => {
    const remove = el("button", { class: "ghost", attrs: { type: "button", "data-remove": r.name } }, "Remove");
    remove.addEventListener("click", () => commands.removeRemote(r.name).then(() => redraw(`Removed ${r.name}.`), fail));
    return el("p", { class: "remote" }, `${r.name} (${r.destination}): ${r.state === "connected" ? `connected, ${r.sessions} sessions` : r.message ?? r.state} `, remove);
  });
  return el("fieldset", { attrs: { id: "set-remotes" } }, el("legend", {}, "Remotes"),
    ...(rows.length === 0 ? [el("p", {}, "None yet.")] : rows),
    el("div", { class: "remote-add" }, name, " ", destination, " ", add),
    message,
  );
}

/// "Answer from the tray", per agent that allows it: on or off, and how long a request waits
/// before the agent asks in its terminal (held within what the agent allows). Filled once the
/// core answers; `drafts` collects the edits that Save sends.
function answeringFieldset(drafts: Map<string, EffectiveChoice>): HTMLElement {
  const body = el("div", { attrs: { id: "set-answering-body" } }, "Loading…");
  const fieldset = el("fieldset", { attrs: { id: "set-answering" } }, el("legend", {}, "Answer from the tray"), body);
  commands.getAnswering().then(
    (choices) => {
      body.replaceChildren(
        ...choices.map((c) => {
          const name = AGENTS.find((a) => a.agent === c.agent)?.name ?? c.agent;
          const enabled = el("input", { attrs: { type: "checkbox", id: `set-answer-${c.agent}` } });
          enabled.checked = c.enabled;
          const wait = el("input", { attrs: { type: "number", min: "1", max: String(c.max_wait_secs), step: "1", id: `set-answer-wait-${c.agent}` } });
          wait.value = String(c.wait_secs);
          const edit = () => {
            const secs = Math.min(c.max_wait_secs, Math.max(1, Math.floor(Number(wait.value) || c.default_wait_secs)));
            wait.value = String(secs);
            drafts.set(c.agent, { ...c, enabled: enabled.checked, wait_secs: secs });
          };
          enabled.addEventListener("change", edit);
          wait.addEventListener("change", edit);
          const note = c.terminal_stays_open
            ? "its dialog stays in the terminal meanwhile"
            : "its terminal shows the prompt only after this wait";
          return el("label", { class: "setting" }, enabled, ` ${name}: wait up to `, wait, ` seconds (at most ${c.max_wait_secs}; ${note})`);
        }),
      );
    },
    (error) => body.replaceChildren(el("p", { class: "error" }, errorMessage(error))),
  );
  return fieldset;
}

/// Fills the Settings dialog from the settings shown and opens it; Save sends the whole draft
/// through one command.
export function openSettings(page: SettingsPage): void {
  const settingsPanel = page.panel;
  const current = page.settings();
  if (!current) return;
  const draft: AppSettings = structuredClone(current);
  const answering = new Map<string, EffectiveChoice>();
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
      .then(() => Promise.all([...answering.values()].map((c) => commands.setAnswering(c.agent, c.enabled, c.wait_secs))))
      .then(() => {
        page.saved(draft);
        settingsPanel.close();
      })
      .catch((error) => page.failed(errorMessage(error)));
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
    el("fieldset", {}, el("legend", {}, "Agents"), ...AGENTS.map(({ agent, name }) =>
      line(checkbox(draft.agents.includes(agent), (v) => {
        draft.agents = v ? [...new Set([...draft.agents, agent])] : draft.agents.filter((a) => a !== agent);
      }, `set-agent-${agent}`), name),
    )),
    el("fieldset", {}, el("legend", {}, "App"),
      line(checkbox(draft.menu_bar_counts, (v) => (draft.menu_bar_counts = v), "set-counts"), "Counts beside the menu-bar icon (macOS)"),
      line(checkbox(draft.launch_at_login, (v) => (draft.launch_at_login = v), "set-login"), "Launch at login"),
      line(checkbox(draft.repair_hooks_automatically, (v) => (draft.repair_hooks_automatically = v), "set-repair-hooks"), "Put the hooks back when another program removes them"),
      line(ttlInput(draft), `seconds of silence end a session with no live process (empty: default, ${LIMITS.sessionTtlSecsDefault})`),
      line(historyDaysInput(draft), `days of history to keep (empty: default, ${LIMITS.historyDaysDefault})`),
    ),
    answeringFieldset(answering),
    remotesFieldset(page),
    el("div", { class: "dialog-buttons" }, cancel, save),
  );
  settingsPanel.showModal();
}
