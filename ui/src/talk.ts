// Talking back from a row: an idle session's reply field (its next prompt) and a working one's
// Stop button. Shown only where the shell says the session allows it now (`can_send`,
// `can_stop`, the core's answer, as `agent-tray list --json` says it): the page never guesses.
//
// The field is one line that grows with its text (a textarea of as many rows as lines, up to a
// few): Enter sends, Shift+Enter starts a new line, and the text is sent as typed, line ends
// kept. What is typed is kept by the view as a draft (`TalkDrafts`), since a row is built anew
// whenever its session changes. A refusal is the engine's sentence, shown in the row as text.
import { agentName } from "./agents";
import type { SessionView } from "./bindings";
import { el } from "./dom";

/// The most lines the field grows to before it scrolls.
const MAX_ROWS = 8;

/// What the view keeps for each row (by session key) across its rebuilds.
export interface TalkDrafts {
  /// Text typed and not yet sent.
  text: Map<string, string>;
  /// The last refusal, shown until the next send or stop.
  error: Map<string, string>;
}

/// What the block needs of the view: how to send and stop, and where a failure is kept.
export interface TalkActions {
  send(key: string, text: string): Promise<void>;
  stop(key: string): Promise<void>;
  /// Esc in the field: the keyboard goes back to the list.
  leave(): void;
}

/// The placeholder that names the session.
export function replyPlaceholder(v: SessionView): string {
  return `Reply to ${agentName(v.session.agent)} in ${v.project}…`;
}

function fit(field: HTMLTextAreaElement): void {
  const lines = Math.min(MAX_ROWS, Math.max(1, field.value.split("\n").length));
  if (field.rows !== lines) field.rows = lines;
}

/// The row's talk block: its refusal, its reply field, its Stop button; null when it offers none.
export function talkBlock(v: SessionView, key: string, drafts: TalkDrafts, actions: TalkActions): HTMLElement | null {
  const s = v.session;
  const error = drafts.error.get(key);
  if (!s.can_send && !s.can_stop && !error) return null;
  const block = el("div", { class: "talk", attrs: { "data-talk-for": key } });
  if (s.can_send) {
    const field = el("textarea", {
      class: "reply",
      attrs: { rows: "1", "data-reply-for": key, placeholder: replyPlaceholder(v), "aria-label": replyPlaceholder(v), spellcheck: "false" },
    });
    field.value = drafts.text.get(key) ?? "";
    fit(field);
    field.addEventListener("input", () => {
      if (field.value) drafts.text.set(key, field.value);
      else drafts.text.delete(key);
      fit(field);
    });
    field.addEventListener("keydown", (e) => {
      // The row's keys (A, D, C, Enter…) and the window's are for the list, not for this field.
      e.stopPropagation();
      if (e.key === "Escape") {
        e.preventDefault();
        actions.leave();
      } else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        if (field.dataset.sending !== undefined || !field.value.trim()) return;
        field.dataset.sending = "";
        field.readOnly = true;
        void actions.send(key, field.value).finally(() => {
          delete field.dataset.sending;
          field.readOnly = false;
        });
      }
    });
    block.append(field);
  }
  if (s.can_stop) {
    const stop = el("button", { class: "action stop", attrs: { type: "button", "data-talk": "stop" }, title: "Stop the running turn" }, "Stop");
    // The keyboard stays where it was (the list), as for the row's other buttons.
    stop.addEventListener("mousedown", (e) => e.preventDefault());
    stop.addEventListener("click", (e) => {
      e.stopPropagation();
      if (stop.disabled) return;
      stop.disabled = true;
      void actions.stop(key).finally(() => (stop.disabled = false));
    });
    block.append(stop);
  }
  // The engine's sentence, as text (never markup), read out when it appears.
  if (error) block.append(el("p", { class: "talk-error", attrs: { role: "alert", "data-talk-error": "" } }, error));
  return block;
}

/// Puts the keyboard in `field` with the caret after its text.
export function focusField(field: HTMLTextAreaElement): void {
  field.focus({ preventScroll: true });
  const end = field.value.length;
  field.setSelectionRange(end, end);
}
