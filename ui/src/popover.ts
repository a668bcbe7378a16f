// The tray's popover: what needs the user, at a glance, under the tray icon (macOS) or from the
// menu's "Open" (Linux). A narrow list, the sessions that need you first (in the core's section
// order, as the window lists them), and a footer with today's "waiting on you" and cost (what
// the Today view reads) and a button to the full window.
//
// The shell creates this page when the popover opens and destroys it when it closes (it closes
// when it loses the focus), so nothing here outlives a glance: one clock while it is open, none
// after. A click on a row jumps to the session (its terminal, editor or tmux pane); Esc closes.
import "./popover.css";
import { AGENTS, SECTIONS } from "./bindings";
import type { Agent, DayReport, PendingView, SessionKey, SessionView } from "./bindings";
import { el } from "./dom";
import { byStartThenId, formatElapsed, secondsSince } from "./format";
import { commands, errorMessage, on } from "./ipc";
import { stampPaint } from "./paint";
import { keyOf, SessionsStore } from "./sessions-store";
import { answerable, answerChoices, grants, noteSeen, requestBlock, type RowChoice } from "./requests";
import { answersOf } from "./questions";

const agentName = (agent: Agent): string => AGENTS.find((a) => a.agent === agent)?.name ?? agent;

const store = new SessionsStore();
const sessions = store.sessions;
let today: DayReport | null = null;
let todayError: string | null = null;
let notice: string | null = null;

const root = document.getElementById("popover") as HTMLElement;
const count = el("span", { class: "pop-count", attrs: { id: "pop-count" } });
const head = el("header", { class: "pop-head" }, el("span", { class: "pop-title" }, "Agent Tray"), count);
const list = el("ul", { class: "pop-list", attrs: { id: "pop-list", role: "list" } });
const waiting = el("span", { attrs: { id: "pop-waiting" } });
const cost = el("span", { attrs: { id: "pop-cost" } });
const openWindow = el("button", { attrs: { type: "button", id: "pop-open-window" } }, "Open window");
const foot = el("footer", { class: "pop-foot", attrs: { id: "pop-footer" } }, el("div", { class: "pop-totals" }, waiting, cost), openWindow);
root.append(head, list, foot);

/// Needs-you first, then working, idle, ended (the core's section order); oldest first within.
function ordered(): SessionView[] {
  const rows = [...sessions.values()].sort(byStartThenId);
  return SECTIONS.flatMap((sec) => rows.filter((v) => v.section === sec.section));
}

function row(v: SessionView): HTMLElement {
  const s = v.session;
  const state = s.waiting_for ? `${v.state_label}: ${s.waiting_for}` : v.state_label;
  // A window close to full is worth a glance here too; the rest is the main window's.
  const detail = v.context?.nearly_full ? `${state} · context ${v.context.text}` : state;
  const item = el(
    "li",
    { class: "pop-row", attrs: { tabindex: "0", "data-session-key": keyOf(s), "data-session-id": s.session_id, "data-section": v.section } },
    el("span", { class: "pop-dot", attrs: { "aria-hidden": "true" } }),
    el(
      "span",
      { class: "pop-main" },
      el("span", { class: "pop-project", title: s.cwd ?? "" }, s.host ? `${v.project} (${s.host})` : v.project),
      el("span", { class: "pop-state" }, `${agentName(s.agent)} · ${detail}`),
    ),
    el("span", { class: "pop-time", attrs: { "data-since": s.state_since } }, formatElapsed(secondsSince(s.state_since, Date.now()))),
  );
  // A request this machine can answer: Allow and Deny right here (the click does not jump).
  const request = answerable(s);
  if (request) {
    const buttons = el(
      "span",
      { class: "pop-answers" },
      ...answerChoices(request)
        .filter((c) => c.choice !== "allow_for_session")
        .map((c) => {
          // The id of the request drawn here: a click answers it or nothing.
          const attrs: Record<string, string> = { type: "button", "data-answer": c.choice, "data-request-id": request.id, title: c.label };
          if (grants(c.choice)) attrs["data-grants"] = "";
          if (c.choice === "submit") attrs["data-sends"] = "";
          const b = el("button", { class: `pop-answer pop-${c.choice}`, attrs }, c.label);
          b.addEventListener("click", (e) => {
            e.stopPropagation();
            void answer(request, s.host ?? null, c.choice);
          });
          return b;
        }),
    );
    const block = requestBlock(s, buttons, Date.now(), () => void answer(request, s.host ?? null, "submit"));
    if (block) {
      item.classList.add("has-ask");
      item.append(block);
    }
  }
  // The row's own host goes with its id: a local and a remote session may share an id.
  const target = { host: s.host, session_id: s.session_id };
  item.addEventListener("click", (e) => {
    // Choosing a question's options or typing an answer is not a wish to jump.
    if ((e.target as HTMLElement).closest(".questions")) return;
    void jump(target);
  });
  item.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !(e.target as HTMLElement).closest(".questions")) void jump(target);
  });
  return item;
}

async function answer(request: PendingView, host: string | null, choice: RowChoice): Promise<void> {
  try {
    if (choice === "submit") {
      // The answers put together for the question drawn here, by its id.
      const answers = answersOf(request);
      if (!answers) {
        notice = "Answer every question first";
        render();
        return;
      }
      await commands.answerQuestion(request.id, host, answers, "popover");
      return;
    }
    await commands.answerRequest(request.id, host, choice, null, "popover");
  } catch (error) {
    notice = errorMessage(error);
    render();
  }
}

async function jump(session: SessionKey): Promise<void> {
  try {
    await commands.jumpToSession(session);
  } catch (error) {
    notice = errorMessage(error);
    render();
  }
}

function render(): void {
  const rows = ordered();
  const needs = rows.filter((v) => v.section === "needs_you").length;
  count.textContent = needs > 0 ? `${needs} need${needs === 1 ? "s" : ""} you` : "";
  list.replaceChildren(...rows.map(row));
  noteSeen(list);
  if (rows.length === 0) list.append(el("li", { class: "pop-empty" }, "No sessions yet"));
  if (notice) list.prepend(el("li", { class: "pop-empty", attrs: { id: "pop-notice", role: "status" } }, notice));
  if (today) {
    waiting.textContent = `Waiting on you today: ${formatElapsed(today.totals.waiting_on_you_secs)}`;
    cost.textContent = today.cost_estimate_usd === null ? "Cost today: not recorded" : `Cost today: ≈ $${today.cost_estimate_usd.toFixed(2)}`;
  } else {
    waiting.textContent = todayError ? "Today: no history" : "";
    cost.textContent = "";
  }
}

function tick(): void {
  const now = Date.now();
  for (const time of list.querySelectorAll<HTMLElement>(".pop-time")) {
    time.textContent = formatElapsed(secondsSince(time.dataset.since ?? "", now));
  }
}

openWindow.addEventListener("click", () => void commands.openMainWindow());
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") void commands.hidePopover();
});

async function start(): Promise<void> {
  // As the window does: the shell created the page with the snapshot in it, so the sessions
  // paint before any round trip through the shell's main thread (the popover used to wait for
  // three, one after another: its listener, the snapshot and today's totals).
  performance.mark("agent-tray:start");
  const boot = window.__agentTrayBoot;
  if (boot) {
    store.applySnapshot(boot.snapshot);
    render();
    stampPaint();
  }
  await on.sessions((e) => {
    if (store.applyEvent(e)) render();
  });
  performance.mark("agent-tray:listening");
  // An event sent between the boot snapshot and the listener reached nobody: this one covers it.
  store.applySnapshot(await commands.getSnapshot());
  performance.mark("agent-tray:caught-up");
  try {
    today = await commands.getToday();
  } catch (error) {
    todayError = errorMessage(error);
  }
  render();
  if (!boot) stampPaint();
  setInterval(tick, 1000);
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  notice = `Cannot load sessions: ${errorMessage(error)}`;
  render();
  document.body.dataset.ready = "error";
});
