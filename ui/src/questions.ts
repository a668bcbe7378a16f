// An agent's question as the window and the popover show it, and the answer being put together.
//
// Each question is shown whole (its header, its text, every option's label and meaning, as the
// core made them visible: `shown.questions`), its options as buttons that stay pressed, and an
// "Other" field where the question takes words of the user's own. Send answers gives all of the
// request's answers at once, and only once every question has one; the core checks them again
// against the question as asked, so nothing here can send what the CLI would refuse.
//
// What is chosen is kept by request id for the page's life (a draft), not in the row: rows are
// rebuilt by every event, and a choice must survive them. The labels sent back are the agent's
// own (`detail.questions`), never the visible forms shown: the agent receives what it offered.
import type { PendingView, QuestionAnswer } from "./bindings";
import { el } from "./dom";

interface Draft {
  /// The labels chosen, per question.
  choices: string[][];
  /// The user's own words, per question ("" for none).
  text: string[];
  /// The question the number keys choose in.
  current: number;
}

const drafts = new Map<string, Draft>();

export const isQuestion = (p: PendingView): boolean => p.kind === "question";

function draftOf(p: PendingView): Draft {
  let d = drafts.get(p.id);
  if (!d) {
    const n = p.questions?.length ?? 0;
    d = { choices: Array.from({ length: n }, () => []), text: Array.from({ length: n }, () => ""), current: 0 };
    drafts.set(p.id, d);
  }
  return d;
}

/// The answers as they stand, one per question; null while a question has none.
export function answersOf(p: PendingView): QuestionAnswer[] | null {
  const questions = p.questions;
  if (!questions || questions.length === 0) return null;
  const d = draftOf(p);
  const answers = questions.map((_, i) => ({ choices: [...d.choices[i]], text: d.text[i].trim() ? d.text[i] : null }));
  return answers.every((a) => a.choices.length > 0 || a.text !== null) ? answers : null;
}

/// Chooses option `option` of question `index`: a single-choice question keeps only it (and
/// drops words typed for it), a multi-choice one toggles it.
export function choose(p: PendingView, index: number, option: number): void {
  const q = p.questions?.[index];
  const label = q?.options[option]?.label;
  if (!q || label === undefined) return;
  const d = draftOf(p);
  const chosen = d.choices[index];
  if (q.multi_select) {
    d.choices[index] = chosen.includes(label) ? chosen.filter((l) => l !== label) : [...chosen, label];
  } else {
    d.choices[index] = [label];
    d.text[index] = "";
    // Answered: the number keys go on to the next question.
    if (index === d.current && index + 1 < (p.questions?.length ?? 0)) d.current = index + 1;
  }
  d.current = Math.min(d.current, (p.questions?.length ?? 1) - 1);
}

/// The number keys: option `n` (1-based) of the current question.
export function chooseByKey(p: PendingView, n: number): void {
  choose(p, draftOf(p).current, n - 1);
}

/// Q: the number keys go on to the next question (round to the first after the last).
export function nextQuestion(p: PendingView): void {
  const d = draftOf(p);
  d.current = (d.current + 1) % Math.max(1, p.questions?.length ?? 1);
}

/// Words of the user's own for question `index`; on a single-choice question they replace its
/// choice (it takes one or the other).
export function setOwnWords(p: PendingView, index: number, text: string): void {
  const q = p.questions?.[index];
  if (!q?.allows_other) return;
  const d = draftOf(p);
  d.text[index] = text;
  if (!q.multi_select && text.trim()) d.choices[index] = [];
}

/// Brings a form's pressed options, its fields, its current question and its Send button in
/// line with the draft (after a click or a key; the form is not rebuilt, so focus and caret
/// stay where they are).
export function syncForm(form: HTMLElement, p: PendingView): void {
  const d = draftOf(p);
  for (const fieldset of form.querySelectorAll<HTMLElement>("[data-question]")) {
    const i = Number(fieldset.dataset.question);
    const q = p.questions?.[i];
    if (!q) continue;
    fieldset.classList.toggle("current", i === d.current);
    for (const b of fieldset.querySelectorAll<HTMLButtonElement>("button[data-option]")) {
      const label = q.options[Number(b.dataset.option)]?.label;
      const on = label !== undefined && d.choices[i].includes(label);
      if (b.getAttribute("aria-pressed") !== String(on)) b.setAttribute("aria-pressed", String(on));
    }
    const other = fieldset.querySelector<HTMLInputElement>("input[data-other]");
    if (other && other.value !== d.text[i]) other.value = d.text[i];
  }
  const ready = answersOf(p) !== null;
  const block = form.closest(".ask") ?? form;
  for (const send of block.querySelectorAll<HTMLButtonElement>("button[data-sends]")) {
    send.disabled = !ready;
    send.title = ready ? (send.dataset.label ?? "") : "Answer every question first";
  }
}

/// The questions as a form: `onSubmit` runs for Enter in an "Other" field once every question
/// has an answer.
export function questionForm(p: PendingView, onSubmit: () => void): HTMLElement {
  const shown = p.shown.questions;
  const asked = p.questions ?? [];
  const form = el("div", { class: "questions", attrs: { "data-question-form": p.id } });
  asked.forEach((q, i) => {
    const s = shown[i];
    const how = q.multi_select ? "choose any" : "choose one";
    const legend = el(
      "div",
      { class: "question-text" },
      asked.length > 1 ? el("span", { class: "question-number" }, `${i + 1}. `) : null,
      s?.header ? el("span", { class: "question-header" }, `${s.header}: `) : null,
      s?.question ?? "",
      el("span", { class: "question-how" }, ` (${how}${q.allows_other ? ", or answer in your own words" : ""})`),
    );
    const options = q.options.map((o, n) => {
      const so = s?.options[n];
      const b = el(
        "button",
        { class: "option", attrs: { type: "button", tabindex: "-1", "data-option": String(n), "aria-pressed": "false" } },
        el("span", { class: "option-key" }, n < 9 ? `${n + 1}` : ""),
        el("span", { class: "option-label" }, so?.label ?? o.label),
        so?.description ? el("span", { class: "option-description" }, so.description) : null,
      );
      b.addEventListener("mousedown", (e) => e.preventDefault());
      // The click goes on to the page (the window selects the row); a page whose rows act on
      // any click (the popover jumps) leaves clicks inside `.questions` alone.
      b.addEventListener("click", () => {
        choose(p, i, n);
        syncForm(form, p);
      });
      return b;
    });
    let other: HTMLInputElement | null = null;
    if (q.allows_other) {
      other = el("input", { class: "other", attrs: { type: "text", "data-other": "", placeholder: "Other: your own words", "aria-label": `Answer to question ${i + 1} in your own words` } });
      const field = other;
      field.addEventListener("input", () => {
        setOwnWords(p, i, field.value);
        syncForm(form, p);
      });
      field.addEventListener("keydown", (e) => {
        // The row's keys (A, D, digits…) are for the list, not for this field.
        e.stopPropagation();
        if (e.key === "Enter" && answersOf(p) !== null) {
          e.preventDefault();
          onSubmit();
        }
      });
    }
    form.append(el("div", { class: "question", attrs: { "data-question": String(i) } }, legend, el("div", { class: "options" }, ...options), other));
  });
  return form;
}
