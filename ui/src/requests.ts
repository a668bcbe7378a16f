// A request as the window and the popover show it (a question's form is in questions.ts): what
// the agent asks, whole, as text. The command line, the file and the address come from the agent
// (and, through it, from whatever the model read): they are put in the page as text nodes, never
// as markup, and long input scrolls inside its box instead of being cut.
//
// Answer only what was seen: a request's Allow (and Allow for session) stays unavailable until
// the whole input has been on screen: its box shows all of it, or it was scrolled to its end, or
// "Show all" unfolded it. A prompt-injected agent can put forty newlines between a harmless first
// line and what really runs; the line count above the box says how much there is. Seen requests
// are remembered by id for the page's life, so a row rebuilt by an event keeps its Allow. Deny
// is always available. The buttons carry the id of the request drawn beside them (see callers).
import { AGENTS } from "./bindings";
import type { AnswerChoice, PendingView, Session } from "./bindings";
import { el } from "./dom";
import { isQuestion, questionForm, syncForm } from "./questions";

const agentName = (agent: PendingView["agent"]): string => AGENTS.find((a) => a.agent === agent)?.name ?? agent;

/// What a row's answer button gives: a permission's answer, or a question's Send answers.
export type RowChoice = AnswerChoice | "submit";

/// The answers a request takes, with their keys: Allow, Deny, and Allow for this session where
/// the agent has it; for a question, Send answers (every question answered) and Decline.
export function answerChoices(p: PendingView): { choice: RowChoice; label: string; key: string }[] {
  if (isQuestion(p)) {
    return [
      { choice: "submit", label: "Send answers", key: "A" },
      { choice: "deny", label: "Decline", key: "D" },
    ];
  }
  const grant = sessionGrant(p);
  return [
    { choice: "allow", label: "Allow", key: "A" },
    { choice: "deny", label: "Deny", key: "D" },
    ...(grant ? [{ choice: "allow_for_session" as const, label: `Allow for session: ${grant.join("; ")}`, key: "S" }] : []),
  ];
}

/// What "allow for this session" would grant, item by item in the core's words; null where there
/// is no session grant (the agent has none, suggested none, or suggested something that cannot
/// be shown whole): then there is no such button.
export function sessionGrant(p: PendingView): string[] | null {
  const grant = p.for_session;
  if (!p.accepts.allow_for_session || !grant || grant.withheld !== null || grant.items.length === 0) return null;
  return grant.items.map((i) => i.text);
}

/// The request this machine can answer for a session: the oldest, and only a local one (a
/// remote's requests are answered on that machine).
export function answerable(s: Session): PendingView | null {
  return !s.host && s.pending.length > 0 ? s.pending[0] : null;
}

/// What is asked, as one text: the command, else the address, else the file (for a tool that
/// changes none), else the tool's whole input (an edit's content included).
/// Every odd character (newline, tab, bidi and zero-width characters…) is shown as a visible mark,
/// as the core renders it (`shown.text`), with a line break after each newline's mark.
export function askedText(p: PendingView): string {
  return p.shown.text;
}

/// Requests whose whole input has been on screen in this page, by id.
const seen = new Set<string>();

/// Whether an answer grants something (and so waits until the whole request was seen). A
/// question's answers are shown whole, never in a scrolling box: its Send waits for answers.
export const grants = (choice: RowChoice): boolean => choice !== "deny" && choice !== "submit";

/// Whether request `id`'s whole input has been on screen here.
export const wasSeen = (id: string): boolean => seen.has(id);

/// What a disabled Allow says.
export const READ_FIRST = "Read the whole request first: scroll it to its end, or Show all (V)";

function markSeen(block: HTMLElement): void {
  const id = block.dataset.requestId;
  if (!id) return;
  seen.add(id);
  block.dataset.seen = "true";
  block.querySelector("[data-ask-expand]")?.remove();
  for (const b of block.querySelectorAll<HTMLButtonElement>("button[data-grants]")) {
    b.disabled = false;
    b.removeAttribute("aria-disabled");
    if (b.title === READ_FIRST) b.title = b.dataset.label ?? "";
  }
}

/// Marks as seen every request block under `root` whose box shows its whole input now (nothing
/// above or below its scroll area). Call after the blocks are in the page, and on resize.
export function noteSeen(root: ParentNode): void {
  for (const block of root.querySelectorAll<HTMLElement>(".ask[data-request-id]:not([data-seen])")) {
    const box = block.querySelector<HTMLElement>("[data-ask-input]");
    if (!box || box.clientHeight === 0) continue; // not laid out: not on screen
    if (box.scrollHeight - box.clientHeight <= 1) markSeen(block);
  }
}

function secondsLeft(p: PendingView, now: number): number {
  return Math.max(0, Math.round((new Date(p.answer_by).getTime() - now) / 1000));
}

/// The block of a question: every question whole with its options, until when, and the buttons
/// (Send answers waits until every question has an answer). A remote's question is listed with
/// where to answer it.
function questionBlock(s: Session, p: PendingView, buttons: HTMLElement | null, now: number, submit: () => void): HTMLElement {
  const count = p.questions?.length ?? 0;
  const more = s.pending.length > 1 ? ` (and ${s.pending.length - 1} more)` : "";
  const head = `${agentName(p.agent)} asks ${count > 1 ? `${count} questions` : "a question"}${more}`;
  const block = el("div", { class: "ask ask-question", attrs: { "data-request-id": p.id, "data-seen": "true", "data-kind": "question" } }, el("div", { class: "ask-head" }, head));
  if (s.host || count === 0) {
    block.append(el("div", { class: "ask-note" }, s.host ? `Answer it on ${s.host}, in its terminal.` : "Answer it in its terminal."));
    return block;
  }
  const form = questionForm(p, submit);
  block.append(
    form,
    el("div", { class: "ask-foot" }, el("span", { class: "ask-left", attrs: { "data-answer-by": p.answer_by } }, `answer within ${secondsLeft(p, now)}s, or in the terminal`), buttons),
  );
  for (const b of block.querySelectorAll<HTMLButtonElement>("button[data-sends]")) b.dataset.label = b.title;
  syncForm(form, p);
  return block;
}

/// The block under a row: who asks what, where; the whole input in a scrolling box; until when.
/// `buttons` are the row's answer buttons, made by the caller (each page wires its own clicks);
/// `submit` sends a question's answers (Enter in its "Other" field).
export function requestBlock(s: Session, buttons: HTMLElement | null, now: number, submit: () => void = () => {}): HTMLElement | null {
  const p = s.pending[0];
  if (p && isQuestion(p)) return questionBlock(s, p, buttons, now, submit);
  if (!p) {
    if (s.state !== "waiting_for_permission") return null;
    // An agent answerable from here with nothing pending was just answered (the agent is about
    // to move on) or has answering off: nothing to say. Elsewhere, say where it is answered, and
    // offer nothing that could deny.
    const answerableHere = AGENTS.find((a) => a.agent === s.agent)?.answerable ?? false;
    if (answerableHere && !s.host) return null;
    const where = s.host ? `Answer it on ${s.host}, in its terminal.` : "Answer it in its terminal.";
    return el("div", { class: "ask ask-elsewhere", attrs: { "data-ask": "elsewhere" } }, where);
  }
  const more = s.pending.length > 1 ? ` (and ${s.pending.length - 1} more)` : "";
  const folder = p.cwd ? ` in ${p.cwd}` : "";
  const left = secondsLeft(p, now);
  const text = askedText(p);
  const lines = p.shown.line_count;
  const grant = sessionGrant(p);
  const box = el("pre", { class: "ask-input", attrs: { tabindex: "-1", "data-ask-input": "", "data-lines": String(lines) } }, text);
  const block = el(
    "div",
    { class: "ask", attrs: { "data-request-id": p.id } },
    el("div", { class: "ask-head" }, `${agentName(p.agent)} asks to use ${p.tool}${folder}${more}`),
    lines > 1 ? el("div", { class: "ask-lines", attrs: { "data-ask-lines": String(lines) } }, `${lines} lines`) : null,
    box,
    p.shown.description ? el("div", { class: "ask-note", attrs: { "data-ask-description": "" } }, p.shown.description) : null,
    grant
      ? el("div", { class: "ask-grant", attrs: { "data-ask-grant": "" } }, "Allow for session would: ", el("ul", {}, ...grant.map((g) => el("li", {}, g))))
      : null,
    s.host
      ? el("div", { class: "ask-note" }, `Answer it on ${s.host}.`)
      : el("div", { class: "ask-foot" }, el("span", { class: "ask-left", attrs: { "data-answer-by": p.answer_by } }, `answer within ${left}s, or in the terminal`), buttons),
  );
  if (seen.has(p.id)) {
    block.dataset.seen = "true";
    return block;
  }
  for (const b of block.querySelectorAll<HTMLButtonElement>("button[data-grants]")) {
    b.disabled = true;
    b.setAttribute("aria-disabled", "true");
    b.dataset.label = b.title;
    b.title = READ_FIRST;
  }
  // Scrolled to its end: all of it has been on screen.
  box.addEventListener("scroll", () => {
    if (box.scrollTop + box.clientHeight >= box.scrollHeight - 1) markSeen(block);
  });
  // Or unfolded: the box grows to show every line.
  const expand = el("button", { class: "ask-expand", attrs: { type: "button", "data-ask-expand": "" } }, lines > 1 ? `Show all ${lines} lines` : "Show all");
  expand.addEventListener("click", (e) => {
    e.stopPropagation();
    box.classList.add("ask-input-all");
    expand.remove();
    markSeen(block);
  });
  box.after(expand);
  return block;
}
