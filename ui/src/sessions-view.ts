// The "Sessions" view: the list of sessions (its sections, rows and their clocks), its filters,
// its selection and keys, and the actions a row offers. A module of its own so that main.ts only
// assembles the page around it.
//
// Focus and keys: the sessions are one listbox whose active row is aria-activedescendant, so
// re-rendering rows never moves the focus. Nothing but the user moves it: events re-render and
// leave the focus where it was (in the filter, say). Keys act on what has the focus: the list
// handles arrows, Home/End, Enter (jump), C (copy resume), T (transcript) and Delete (dismiss);
// every other control keeps its own keys.
//
// The window is destroyed when closed and created again when opened (a closed window costs no
// webview), so what the user had (filters, selection, scroll) is kept by the shell: saved
// there as it changes, read back at start.
//
// Clocks: a row's time in state changes every second only while it shows seconds (under an
// hour), then every minute, then every hour. One timer waits for the next change of any row,
// rounded up to the wall clock's next whole second (so fifty rows showing seconds wake it once a
// second, not fifty times), and none runs while the page is hidden (minimised or occluded, where
// the platform says so). A tick rewrites only the times whose text changed, in place.
//
// Rendering is keyed: a row is built once per view the shell sends and kept while that view is
// current, so an event builds and lays out one row, not the list (with hundreds of rows and a
// hook every few milliseconds, rebuilding the list fell seconds behind).
import { AGENTS, SECTIONS } from "./bindings";
import { agentBadge, agentName } from "./agents";
import type { Agent, AnswerChoice, SessionEvent, SessionView, WindowMemory } from "./bindings";
import { el, setText } from "./dom";
import { byStartThenId, clockTime, formatElapsed, secondsSince } from "./format";
import { commands, errorMessage } from "./ipc";
import { keyOf, parseKey, SessionsStore, sessionKey } from "./sessions-store";
import { answerable, answerChoices, grants, noteSeen, READ_FIRST, requestBlock, type RowChoice } from "./requests";
import { answersOf, chooseByKey, isQuestion, nextQuestion, syncForm } from "./questions";
import { focusField, talkBlock, type TalkDrafts } from "./talk";

/// A line for the page's banner.
export type Notice = { kind: "info" | "error"; text: string };

/// What the sessions view needs of the page around it.
export interface SessionsPage {
  /// The sessions shown: the store the page applies snapshots to.
  store: SessionsStore;
  /// Shows a notice in the page's banner (a command copied, an action that failed).
  notify(notice: Notice): void;
  /// Runs the hooks' installer (the button of the empty list).
  installHooks(): void;
  /// Draws the page's parts that show beside the list (the banner, the footer): called at the end
  /// of every render of the list.
  afterRender(): void;
}

/// The view, as the page assembles and drives it.
export interface SessionsView {
  /// The filters, for the page's toolbar.
  filterInput: HTMLInputElement;
  agentSelect: HTMLSelectElement;
  /// The list (with the message shown when it has no rows), for the page's body.
  list: HTMLElement;
  /// The listbox inside the list: the window's keys give it the focus.
  listbox: HTMLElement;
  /// The list's keys, spelled out, for the page's footer.
  keysHelp: HTMLElement;
  render(): void;
  /// Applies one event to the store unless it is older than what the window shows.
  applyEvent(e: SessionEvent): void;
  /// Puts back what the user had (filters, selection, scroll), and saves it as it changes from
  /// then on.
  restore(memory: WindowMemory): void;
  /// The user chose this session (by key) in the tray or an alert: show it, and give the list the
  /// focus, or its reply field (`reply`: an alert's Reply).
  focusSession(key: string, reply?: boolean): void;
  /// Empties the filter box (Esc in it).
  clearFilter(): void;
  /// Moves the selection by rows, or to the first or last.
  move(to: number | "first" | "last"): void;
  /// Puts the clock times into the descriptions of the rows built before they had them.
  describeSince(): void;
}

function matches(v: SessionView, text: string): boolean {
  if (!text) return true;
  const s = v.session;
  return [v.project, s.cwd, s.branch, s.model, s.title, s.session_id, v.state_label, s.last_tool, s.error, agentName(s.agent), s.host]
    .some((field) => typeof field === "string" && field.toLowerCase().includes(text));
}

function timeText(v: SessionView): string {
  return formatElapsed(secondsSince(v.session.state_since, Date.now()));
}

/// What a row offers, for the buttons (mouse) and the row's description (keyboard, screen
/// readers) alike.
function rowActions(v: SessionView): { action: string; label: string; key: string }[] {
  const request = answerable(v.session);
  return [
    ...(request ? answerChoices(request).map((c) => ({ action: `answer:${c.choice}`, label: c.label, key: c.key })) : []),
    { action: "jump", label: "Jump", key: "Enter" },
    { action: "copy", label: "Copy resume", key: "C" },
    // A remote's transcript is on that machine: nothing to open here.
    ...(v.session.transcript_path && !v.session.host ? [{ action: "transcript", label: "Transcript", key: "T" }] : []),
    ...(v.section === "ended" ? [{ action: "dismiss", label: "Dismiss", key: "Delete" }] : []),
  ];
}

function sinceText(iso: string): string {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? "" : ` since ${clockTime(t)}`;
}

/// Until when a used-up plan window stops the session, in local time, while it does.
function blockedDetail(until: string | null): HTMLElement | null {
  if (!until) return null;
  const at = new Date(until);
  if (Number.isNaN(at.getTime()) || at.getTime() <= Date.now()) return null;
  const sameDay = at.toDateString() === new Date().toDateString();
  const when = sameDay ? clockTime(at) : `${at.toLocaleDateString([], { weekday: "short" })} ${clockTime(at)}`;
  return el("span", { class: "detail blocked", attrs: { "data-blocked-until": until } }, `plan limit reached: can go on at ${when}`);
}

/// How full the session's context window is, as the agent said it (the core's words and
/// percent); nothing when it said nothing. A compact seen is said in the tooltip.
function contextMeter(v: SessionView): HTMLElement | null {
  const c = v.context;
  if (!c) return null;
  const compacted = v.session.compacted_at ? ` · compacted at ${clockTime(new Date(v.session.compacted_at))}` : "";
  let bar: HTMLElement | null = null;
  if (c.percent !== null) {
    // Through the CSSOM, not a style attribute: the page's CSP allows no inline style.
    const fill = el("span", { class: "context-fill" });
    fill.style.width = `${c.percent}%`;
    bar = el("span", { class: "context-bar", attrs: { "aria-hidden": "true" } }, fill);
  }
  return el(
    "span",
    {
      class: `context${c.nearly_full ? " nearly-full" : ""}`,
      title: `context window: ${c.text}${compacted}${c.window_hint ? ` · ${c.window_hint}` : ""}`,
      attrs: { "data-context-percent": c.percent === null ? "" : String(c.percent) },
    },
    bar,
    el("span", { class: "context-text" }, c.text),
  );
}

/// "A", "A or B", "A, B or C": a list people read, however many agents there are.
function listOf(names: string[]): string {
  if (names.length < 2) return names.join("");
  return `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;
}

/// Makes `parent`'s children exactly `wanted`, in order, moving only the nodes out of place.
function reconcile(parent: HTMLElement, wanted: HTMLElement[]): void {
  let at = parent.firstChild;
  for (const node of wanted) {
    if (at === node) {
      at = node.nextSibling;
      continue;
    }
    parent.insertBefore(node, at);
  }
  while (at) {
    const next = at.nextSibling;
    at.remove();
    at = next;
  }
}

async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // WebKitGTK may refuse the async clipboard; the selection-based copy works everywhere.
    const focused = document.activeElement as HTMLElement | null;
    const area = el("textarea", { attrs: { readonly: "", "aria-hidden": "true" } });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
    focused?.focus({ preventScroll: true }); // the copy borrowed the focus: give it back
  }
}

/// Milliseconds until the text of a row `elapsedMs` into its state next changes (the rules of
/// format.ts: seconds under an hour, minutes under a day, hours after).
function untilNextChange(elapsedMs: number): number {
  if (elapsedMs < 0) return 1000 - elapsedMs; // "0s" until the clock catches up
  const unit = elapsedMs < 3_600_000 ? 1000 : elapsedMs < 86_400_000 ? 60_000 : 3_600_000;
  return unit - (elapsedMs % unit);
}

const ROW_KEYS: Record<string, string> = {
  Enter: "jump",
  c: "copy",
  C: "copy",
  t: "transcript",
  T: "transcript",
  Delete: "dismiss",
  a: "answer:allow",
  A: "answer:allow",
  d: "answer:deny",
  D: "answer:deny",
  s: "answer:allow_for_session",
  S: "answer:allow_for_session",
};

const KEYS_HELP = "↑↓ Home End: choose · V: show a request whole · A: allow (a question: send answers) · D: deny · S: allow for session · 1–9: choose a question's option · Q: next question · Enter: jump · C: copy resume · T: transcript · Delete: dismiss · /: filter · Esc: hide";

declare global {
  interface Window {
    /// How many times the row clock woke up: tests check it stands still while hidden.
    __agentTrayTimerTicks: number;
    /// How many row times the clock rewrote (only those whose text changed): tests check a tick
    /// touches only the rows that show seconds.
    __agentTrayClockWrites: number;
    /// How many rows were built: tests check that an event builds the one row it is about.
    __agentTrayRowsBuilt: number;
  }
}

export function createSessionsView(page: SessionsPage): SessionsView {
  const store = page.store;
  const state = {
    /// The rows shown: the store's map, changed in place by snapshots and events.
    sessions: store.sessions,
    filterText: "",
    filterAgent: "all" as Agent | "all",
    /// The selected row's key (host and id, see `sessionKey`).
    selected: null as string | null,
  };

  // ---- layout (built once) --------------------------------------------------------------------
  const filterInput = el("input", {
    class: "filter",
    attrs: { type: "search", placeholder: "Filter sessions…", "aria-label": "Filter sessions", id: "filter" },
  });
  const agentSelect = el(
    "select",
    { class: "agent-filter", attrs: { "aria-label": "Agent", id: "agent-filter" } },
    el("option", { attrs: { value: "all" } }, "All agents"),
    ...AGENTS.map((a) => el("option", { attrs: { value: a.agent } }, a.name)),
  );
  const keysHelp = el("span", { class: "keys-help", attrs: { id: "keys-help" } }, KEYS_HELP);
  const listbox = el("div", {
    class: "listbox",
    attrs: {
      role: "listbox",
      id: "session-list",
      "aria-label": "Sessions",
      tabindex: "0",
      "aria-describedby": "keys-help",
      "aria-keyshortcuts": "ArrowUp ArrowDown Home End Enter C T Delete",
    },
  });
  const message = el("div", { class: "message", attrs: { id: "message" } });
  const list = el("main", { class: "sessions", attrs: { id: "sessions" } }, listbox, message);

  // ---- rendering -------------------------------------------------------------------------------
  /// Visible rows in display order (section by section, oldest session first within a section,
  /// as the core orders them): what is rendered and what the arrow keys walk through.
  function displayOrder(): SessionView[] {
    const text = state.filterText.trim().toLowerCase();
    const rows = [...state.sessions.values()]
      .filter((v) => state.filterAgent === "all" || v.session.agent === state.filterAgent)
      .filter((v) => matches(v, text))
      .sort(byStartThenId);
    return SECTIONS.flatMap((sec) => rows.filter((v) => v.section === sec.section));
  }

  /// Row element ids for aria-activedescendant, by session key: session ids are data, never used
  /// as ids.
  const domIds = new Map<string, string>();
  function domId(key: string): string {
    let id = domIds.get(key);
    if (!id) {
      id = `row-${domIds.size + 1}`;
      domIds.set(key, id);
    }
    return id;
  }

  /// Whether the rows' descriptions say since when (a clock time). Not in the first frame: the
  /// first clock time builds WebKit's ICU date formatter for the locale, 10-12 ms of a new page's
  /// start (benches/at_rest.sh, MARKS=1), for text only a screen reader hears. Once the first
  /// frame is on screen, [`describeSince`] adds the times; rows built from then on have them at
  /// once.
  let descriptionsSayWhen = false;

  /// The hidden description a screen reader hears for a row: its state, since when, its keys.
  function describe(v: SessionView, offered: ReturnType<typeof rowActions>): string {
    const since = descriptionsSayWhen ? sinceText(v.session.state_since) : "";
    return `${v.state_label}${since}. ${offered.map((a) => `${a.key}: ${a.label.toLowerCase()}`).join(", ")}.`;
  }

  /// Puts the clock times into the descriptions of the rows built before they had them.
  function describeSince(): void {
    if (descriptionsSayWhen) return;
    descriptionsSayWhen = true;
    for (const [key, { view }] of built) {
      const description = document.getElementById(`${domId(key)}-keys`);
      if (description) setText(description, describe(view, rowActions(view)));
    }
  }

  function row(v: SessionView): HTMLElement {
    const s = v.session;
    const key = keyOf(s);
    const id = domId(key);
    const offered = rowActions(v);
    const detail = s.error ? `error: ${s.error}` : s.waiting_for ? `waiting for: ${s.waiting_for}` : s.last_tool ? `last tool: ${s.last_tool}` : null;
    // The buttons are for the mouse: an option's content is presentational to assistive
    // technology, so the same actions are offered by keys and spelled out in the description.
    // An answer button carries the id of the request drawn beside it: a click answers that
    // request or nothing, never whatever the session holds by then.
    const request = answerable(s);
    const answerAttrs = (a: (typeof offered)[number]): Record<string, string> =>
      a.action.startsWith("answer:") && request
        ? {
            "data-request-id": request.id,
            ...(grants(a.action.slice("answer:".length) as RowChoice) ? { "data-grants": "" } : {}),
            ...(a.action === "answer:submit" ? { "data-sends": "" } : {}),
          }
        : {};
    const button = (a: (typeof offered)[number]) =>
      el(
        "button",
        { class: `action${a.action.startsWith("answer:") ? ` ${a.action.replace(":", "-").replace(/_/g, "-")}` : ""}`, attrs: { type: "button", "data-action": a.action, tabindex: "-1", ...answerAttrs(a) }, title: a.action === "copy" ? v.resume_command : `${a.label} (${a.key})` },
        a.label,
      );
    const actions = el("div", { class: "actions", attrs: { "aria-hidden": "true" } }, ...offered.filter((a) => !a.action.startsWith("answer:")).map(button));
    const answers = offered.filter((a) => a.action.startsWith("answer:"));
    const ask = requestBlock(
      s,
      answers.length > 0 ? el("div", { class: "actions answers", attrs: { "aria-hidden": "true" } }, ...answers.map(button)) : null,
      Date.now(),
      () => void act("answer:submit", key),
    );
    const description = el(
      "span",
      { attrs: { id: `${id}-keys`, hidden: "" } },
      describe(v, offered),
    );
    return el(
      "li",
      {
        class: `row state-${s.state}`,
        attrs: {
          role: "option",
          id,
          "data-session-id": s.session_id,
          "data-session-key": key,
          "data-state": s.state,
          "aria-selected": String(state.selected === key),
          "aria-describedby": `${id}-keys`,
        },
      },
      el(
        "div",
        { class: "line" },
        agentBadge(s.agent),
        el("span", { class: "project", title: s.cwd ?? "" }, v.project),
        // A remote's name, from the user's own configuration; text like everything else here.
        s.host ? el("span", { class: "host", title: "remote host", attrs: { "data-host": s.host } }, s.host) : null,
        s.branch ? el("span", { class: "branch" }, s.branch) : null,
        s.model ? el("span", { class: "model" }, s.model) : null,
        el("span", { class: "spacer" }),
        s.subagents > 0 ? el("span", { class: "subagents", title: "running subagents" }, `${s.subagents} subagent${s.subagents === 1 ? "" : "s"}`) : null,
        contextMeter(v),
        el("span", { class: `pill pill-${v.section}` }, v.state_label),
        // Ticks every second: hidden from screen readers, which hear "since 10:42" instead.
        el("span", { class: "time", attrs: { "data-since": s.state_since, "aria-hidden": "true" } }, timeText(v)),
      ),
      el(
        "div",
        { class: "line secondary" },
        s.title ? el("span", { class: "title" }, s.title) : null,
        s.unreachable_since ? el("span", { class: "detail unreachable" }, `unreachable${sinceText(s.unreachable_since)}`) : null,
        blockedDetail(s.blocked_until),
        detail ? el("span", { class: s.error ? "detail error" : "detail" }, detail) : null,
        // A compact the agent made: its earlier context is a summary now.
        s.compacted_at ? el("span", { class: "detail compacted", attrs: { "data-compacted-at": s.compacted_at } }, `compacted ${clockTime(new Date(s.compacted_at))}`) : null,
        el("span", { class: "spacer" }),
        actions,
      ),
      ask,
      talkBlock(v, key, drafts, talkActions),
      description,
    );
  }

  // ---- talking back (talk.ts) -------------------------------------------------------------------
  const drafts: TalkDrafts = { text: new Map(), error: new Map() };

  /// Builds the row of `key` again (its talk block changed) and shows it.
  function redraw(key: string): void {
    built.delete(key);
    render();
  }

  async function talk(key: string, run: (session: { host: string | null; session_id: string }) => Promise<unknown>, sent: () => void): Promise<void> {
    const v = state.sessions.get(key);
    if (!v) return;
    const session = { host: v.session.host ?? null, session_id: v.session.session_id };
    try {
      await run(session);
      sent();
      drafts.error.delete(key);
    } catch (error) {
      drafts.error.set(key, errorMessage(error));
    }
    redraw(key);
  }

  const talkActions = {
    send: (key: string, text: string) =>
      talk(
        key,
        (s) => commands.sendPrompt(s, text),
        () => drafts.text.delete(key),
      ),
    stop: (key: string) =>
      talk(
        key,
        (s) => commands.stopTurn(s),
        () => undefined,
      ),
    leave: () => listbox.focus({ preventScroll: true }),
  };

  /// The reply field of the row of `key`, as drawn.
  function replyField(key: string): HTMLTextAreaElement | null {
    return built.get(key)?.node.querySelector<HTMLTextAreaElement>("textarea[data-reply-for]") ?? null;
  }

  function emptyState(): HTMLElement {
    const install = el("button", { class: "primary", attrs: { type: "button", id: "install-hooks" } }, "Install hooks");
    install.addEventListener("click", () => page.installHooks());
    const names = listOf(AGENTS.map((a) => a.name));
    return el(
      "div",
      { class: "empty", attrs: { id: "empty" } },
      el("h2", {}, "No sessions yet"),
      el(
        "p",
        {},
        `Sessions appear here as soon as a coding agent (${names}) runs on this machine: its hooks report each session to Agent Tray, and its own session files are watched too.`,
      ),
      el("p", {}, "If nothing shows up while an agent runs, install the hooks:"),
      install,
    );
  }

  /// Rows as built, by session key: a row is built again only when its view changed (an event
  /// brings a new view object; every other row keeps its own), so an event touches the one row
  /// it is about instead of rebuilding the list, and the page lays out and paints only that row.
  const built = new Map<string, { view: SessionView; node: HTMLElement }>();
  /// Each section's element, its count and its list, made once and kept while it has rows.
  const sectionNodes = new Map<string, { node: HTMLElement; count: HTMLElement; list: HTMLElement }>();

  function rowNode(v: SessionView): HTMLElement {
    const key = keyOf(v.session);
    const had = built.get(key);
    if (had && had.view === v) return had.node;
    const node = row(v);
    built.set(key, { view: v, node });
    window.__agentTrayRowsBuilt += 1;
    return node;
  }

  function sectionNode(sec: (typeof SECTIONS)[number], rows: HTMLElement[]): HTMLElement {
    let s = sectionNodes.get(sec.section);
    if (!s) {
      const count = el("span", { class: "count" });
      const list = el("ul", { attrs: { role: "none" } });
      const node = el(
        "section",
        { class: `section section-${sec.section}`, attrs: { role: "group", "data-section": sec.section, "aria-label": sec.title } },
        el("h2", { attrs: { "aria-hidden": "true" } }, sec.title, count),
        list,
      );
      s = { node, count, list };
      sectionNodes.set(sec.section, s);
    }
    setText(s.count, String(rows.length));
    reconcile(s.list, rows);
    return s.node;
  }

  function render(): void {
    // A row whose field has the keyboard may be built anew below (its session changed): the new
    // row's field takes the keyboard back, caret at the end.
    const typing = document.activeElement instanceof HTMLTextAreaElement ? (document.activeElement.dataset.replyFor ?? null) : null;
    const rows = displayOrder();
    if (state.selected && !rows.some((v) => keyOf(v.session) === state.selected)) {
      // The selected row is filtered out or gone: the list has no active row.
      state.selected = null;
    }
    for (const [id, b] of built) if (state.sessions.get(id) !== b.view) built.delete(id);
    const groups: HTMLElement[] = [];
    for (const sec of SECTIONS) {
      const inSection = rows.filter((v) => v.section === sec.section);
      if (inSection.length === 0) continue;
      groups.push(sectionNode(sec, inSection.map(rowNode)));
    }
    // The listbox stays in the page (it may have the focus); only its rows change.
    reconcile(listbox, groups);
    noteSeen(listbox);
    if (listbox.hidden !== (groups.length === 0)) listbox.hidden = groups.length === 0;
    const messageKind = state.sessions.size === 0 ? "empty" : groups.length === 0 ? "no-match" : "";
    if (message.dataset.kind !== messageKind) {
      message.dataset.kind = messageKind;
      if (messageKind === "empty") message.replaceChildren(emptyState());
      else if (messageKind === "no-match") message.replaceChildren(el("p", { class: "no-match", attrs: { id: "no-match" } }, "No session matches the filter."));
      else message.replaceChildren();
    }
    markActive(false);
    if (typing !== null && !(document.activeElement instanceof HTMLTextAreaElement)) {
      const field = replyField(typing);
      if (field) focusField(field);
    }
    tick(); // a row kept from before (filtered out a while, say) shows its time as of now
    scheduleClock();
    remember();
    page.afterRender();
  }

  /// Brings every row's time up to now, writing only the texts that changed (into the text node
  /// already there: no node is replaced), and counts the writes.
  function tick(): void {
    const now = Date.now();
    for (const node of listbox.querySelectorAll<HTMLElement>(".ask-left[data-answer-by]")) {
      const left = Math.max(0, Math.round((Date.parse(node.dataset.answerBy ?? "") - now) / 1000));
      const text = `answer within ${left}s, or in the terminal`;
      if (node.textContent !== text) node.textContent = text;
    }
    for (const node of listbox.querySelectorAll<HTMLElement>(".time[data-since]")) {
      const text = formatElapsed(secondsSince(node.dataset.since ?? "", now));
      const shown = node.firstChild;
      if (shown instanceof Text) {
        if (shown.data === text) continue;
        shown.data = text;
      } else {
        node.textContent = text;
      }
      window.__agentTrayClockWrites += 1;
    }
  }

  // ---- the clock ------------------------------------------------------------------------------
  window.__agentTrayTimerTicks = 0;
  window.__agentTrayClockWrites = 0;
  window.__agentTrayRowsBuilt = 0;
  let clockTimer: ReturnType<typeof setTimeout> | null = null;

  /// Sets the one timer for the next change of any row's text; none while hidden or empty.
  function scheduleClock(): void {
    if (clockTimer !== null) {
      clearTimeout(clockTimer);
      clockTimer = null;
    }
    if (document.hidden) return;
    const now = Date.now();
    let next = Infinity;
    for (const node of listbox.querySelectorAll<HTMLElement>(".time[data-since]")) {
      const since = Date.parse(node.dataset.since ?? "");
      if (!Number.isNaN(since)) next = Math.min(next, untilNextChange(now - since));
    }
    if (next === Infinity) return;
    // On the wall clock's next whole second after that change: the rows' changes fall at their
    // own instants within each second, and one wake-up a second paints them all at once (a row's
    // time is at most a second late) where waking for each would paint fifty times a second.
    next = Math.ceil((now + next) / 1000) * 1000 - now;
    clockTimer = setTimeout(() => {
      clockTimer = null;
      window.__agentTrayTimerTicks += 1;
      tick();
      scheduleClock();
    }, next);
  }

  // A wider window may show a request's whole input in its box: that counts as seen.
  window.addEventListener("resize", () => noteSeen(listbox));

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) tick(); // the rows caught up at once, then the timer again
    scheduleClock();
  });

  // ---- what the user had, kept by the shell ---------------------------------------------------
  /// Nothing is saved before the saved state is read back at start.
  let memoryRestored = false;
  let lastSaved = "";
  let scrollSave: ReturnType<typeof setTimeout> | null = null;

  function remember(): void {
    if (!memoryRestored) return;
    const memory = {
      filter_text: state.filterText,
      filter_agent: state.filterAgent === "all" ? null : state.filterAgent,
      selected: state.selected === null ? null : parseKey(state.selected),
      scroll_top: Math.round(window.scrollY),
      open_settings: false,
      install_report: null,
      focus: null,
      focus_reply: false,
    };
    const text = JSON.stringify(memory);
    if (text === lastSaved) return;
    lastSaved = text;
    void commands.saveWindowMemory(memory).catch(() => undefined);
  }

  window.addEventListener("scroll", () => {
    // Saved once the scrolling settles, not for every frame of it.
    if (scrollSave !== null) clearTimeout(scrollSave);
    scrollSave = setTimeout(() => {
      scrollSave = null;
      remember();
    }, 200);
  });

  function restore(memory: WindowMemory): void {
    state.filterText = memory.filter_text;
    filterInput.value = memory.filter_text;
    state.filterAgent = memory.filter_agent ?? "all";
    agentSelect.value = state.filterAgent;
    state.selected = memory.selected ? keyOf(memory.selected) : null;
    render();
    markActive(false);
    window.scrollTo(0, memory.scroll_top);
    memoryRestored = true;
    remember();
  }

  function focusSession(key: string, reply = false): void {
    state.filterText = "";
    filterInput.value = "";
    state.filterAgent = "all";
    agentSelect.value = "all";
    render();
    listbox.focus({ preventScroll: true });
    select(key);
    const field = reply ? replyField(key) : null;
    if (field) {
      field.scrollIntoView({ block: "nearest" });
      focusField(field);
    }
  }

  // ---- data -----------------------------------------------------------------------------------
  function applyEvent(e: SessionEvent): void {
    // A removed row that was selected hands the selection on (the next row, or the one before),
    // so a keyboard user keeps their place; worked out before the row goes.
    const removed = e.kind === "removed" ? sessionKey(e.host, e.session_id) : null;
    const order =
      removed !== null && state.selected === removed && store.accepts(e) ? displayOrder().map((v) => keyOf(v.session)) : null;
    if (!store.applyEvent(e) || !order || removed === null) return;
    const at = order.indexOf(removed);
    state.selected = order[at + 1] ?? order[at - 1] ?? null;
  }

  // ---- selection and keys -------------------------------------------------------------------
  /// Marks the selected row as the list's active option. Never moves the focus.
  function markActive(scroll: boolean): void {
    let active: HTMLElement | null = null;
    for (const node of listbox.querySelectorAll<HTMLElement>(".row")) {
      const on = node.dataset.sessionKey === state.selected;
      if (node.getAttribute("aria-selected") !== String(on)) node.setAttribute("aria-selected", String(on));
      if (on) active = node;
    }
    if (active) {
      if (listbox.getAttribute("aria-activedescendant") !== active.id) listbox.setAttribute("aria-activedescendant", active.id);
    } else if (listbox.hasAttribute("aria-activedescendant")) listbox.removeAttribute("aria-activedescendant");
    if (active && scroll) active.scrollIntoView({ block: "nearest" });
  }

  function select(key: string | null, scroll = true): void {
    state.selected = key;
    markActive(scroll);
    remember();
  }

  function move(to: number | "first" | "last"): void {
    const order = displayOrder();
    if (order.length === 0) return;
    const at = order.findIndex((v) => keyOf(v.session) === state.selected);
    let next: number;
    if (to === "first") next = 0;
    else if (to === "last") next = order.length - 1;
    else if (at < 0) next = to > 0 ? 0 : order.length - 1;
    else next = Math.min(order.length - 1, Math.max(0, at + to));
    select(keyOf(order[next].session));
  }

  /// The answer button for `action` in the row of `key` as drawn on screen: what a key press
  /// answers is the request shown there, by the id the button was drawn with.
  function drawnAnswer(action: string, key: string): HTMLButtonElement | null {
    const node = built.get(key)?.node;
    return node?.querySelector<HTMLButtonElement>(`button[data-action="${action}"][data-request-id]`) ?? null;
  }

  /// A question's keys on the selected row: 1–9 choose an option of its current question, Q
  /// goes on to the next question, A sends the answers. False where the row asks no question
  /// (the key is then the row's own).
  function questionKey(pressed: string, key: string): boolean {
    const node = built.get(key)?.node;
    const form = node?.querySelector<HTMLElement>("[data-question-form]");
    const asked = state.sessions.get(key)?.session.pending.find((p) => p.id === form?.dataset.questionForm);
    if (!form || !asked || !isQuestion(asked)) return false;
    if (/^[1-9]$/.test(pressed)) chooseByKey(asked, Number(pressed));
    else if (pressed === "q" || pressed === "Q") nextQuestion(asked);
    else if (pressed === "a" || pressed === "A") void act("answer:submit", key);
    else return false;
    syncForm(form, asked);
    return true;
  }

  async function act(action: string, key: string, drawn: HTMLButtonElement | null = null): Promise<void> {
    const v = state.sessions.get(key);
    if (!v) return;
    if (!rowActions(v).some((a) => a.action === action)) return;
    // The session as the shell finds it: on its own host, never a same-id session elsewhere.
    const session = { host: v.session.host ?? null, session_id: v.session.session_id };
    try {
      if (action.startsWith("answer:")) {
        const button = drawn ?? drawnAnswer(action, key);
        const requestId = button?.dataset.requestId;
        if (!button || !requestId) return;
        if (action === "answer:submit") {
          // The answers put together for the question drawn here, by its id.
          const asked = v.session.pending.find((p) => p.id === requestId);
          const answers = asked ? answersOf(asked) : null;
          if (!answers) {
            page.notify({ kind: "info", text: "Answer every question first: choose an option (1–9) or type your own words" });
            return;
          }
          await commands.answerQuestion(requestId, session.host, answers, "window");
          return;
        }
        if (button.disabled) {
          page.notify({ kind: "info", text: READ_FIRST });
          return;
        }
        await commands.answerRequest(requestId, session.host, action.slice("answer:".length) as AnswerChoice, null, "window");
      } else if (action === "jump") await commands.jumpToSession(session);
      else if (action === "transcript") await commands.revealTranscript(session);
      else if (action === "dismiss") await commands.dismissSession(session);
      else if (action === "copy") {
        await copyText(v.resume_command);
        page.notify({ kind: "info", text: `Copied: ${v.resume_command}` });
      }
    } catch (error) {
      page.notify({ kind: "error", text: errorMessage(error) });
    }
  }

  // A click in the list selects the row and gives the list the focus (the user went there);
  // a click on a row's button also runs its action.
  listbox.addEventListener("mousedown", (event) => {
    // Keep the focus on the listbox rather than on the (aria-hidden) button clicked.
    if ((event.target as HTMLElement).closest("[data-action]")) event.preventDefault();
  });
  listbox.addEventListener("click", (event) => {
    const target = event.target as HTMLElement;
    const rowNode = target.closest<HTMLElement>(".row");
    if (!rowNode?.dataset.sessionKey) return;
    const key = rowNode.dataset.sessionKey;
    // A click into a field (a reply, a question's own words) leaves the keyboard there.
    if (!target.closest("textarea, input")) listbox.focus({ preventScroll: true });
    select(key, false);
    const clicked = target.closest<HTMLElement>("[data-action]");
    const action = clicked?.dataset.action;
    if (action) void act(action, key, clicked instanceof HTMLButtonElement && clicked.dataset.requestId ? clicked : null);
  });

  listbox.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    const moves: Record<string, number | "first" | "last"> = { ArrowDown: 1, ArrowUp: -1, Home: "first", End: "last", PageDown: 5, PageUp: -5 };
    if (event.key in moves) {
      event.preventDefault();
      move(moves[event.key]);
    } else if ((event.key === "v" || event.key === "V") && state.selected) {
      // Show the selected row's request whole: the keyboard's "Show all".
      event.preventDefault();
      built.get(state.selected)?.node.querySelector<HTMLButtonElement>("[data-ask-expand]")?.click();
    } else if (state.selected && questionKey(event.key, state.selected)) {
      event.preventDefault();
    } else if (event.key in ROW_KEYS && state.selected) {
      event.preventDefault();
      void act(ROW_KEYS[event.key], state.selected);
    }
  });

  filterInput.addEventListener("keydown", (event) => {
    // From the filter, ArrowDown goes on to the rows it left.
    if (event.key === "ArrowDown" && !listbox.hidden) {
      event.preventDefault();
      listbox.focus();
      if (!state.selected) move("first");
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

  function clearFilter(): void {
    filterInput.value = "";
    state.filterText = "";
    render();
  }

  return { filterInput, agentSelect, list, listbox, keysHelp, render, applyEvent, restore, focusSession, clearFilter, move, describeSince };
}
