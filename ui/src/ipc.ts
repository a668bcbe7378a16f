// The one typed wrapper around the shell's commands and events. Every payload type comes from
// bindings.ts, generated from the Rust types; nothing here knows how sessions behave.
import { invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { EVENTS } from "./bindings";
import type {
  Agent,
  AnswerChoice,
  EffectiveChoice,
  AnswerFrom,
  AppSettings,
  CommandError,
  DayReport,
  FocusSession,
  HistoryEntry,
  HistoryQuery,
  InstallReport,
  PlanWindow,
  QuestionAnswer,
  SessionDetail,
  SessionEvent,
  SessionKey,
  Snapshot,
  WindowMemory,
} from "./bindings";

export const commands = {
  getSnapshot: () => invoke<Snapshot>("get_snapshot"),
  // Every command about a session names its host too (null: this machine): ids are unique per
  // host only, and the shell looks the session up there and nowhere else.
  jumpToSession: (s: SessionKey) => invoke<null>("jump_to_session", { sessionId: s.session_id, host: s.host }),
  revealTranscript: (s: SessionKey) => invoke<null>("reveal_transcript", { sessionId: s.session_id, host: s.host }),
  dismissSession: (s: SessionKey) => invoke<null>("dismiss_session", { sessionId: s.session_id, host: s.host }),
  saveSettings: (settings: AppSettings) => invoke<null>("save_settings", { settings }),
  addRemote: (name: string, destination: string) => invoke<null>("add_remote", { name, destination }),
  removeRemote: (name: string) => invoke<null>("remove_remote", { name }),
  installHooks: () => invoke<InstallReport>("install_hooks"),
  hideWindow: () => invoke<null>("hide_window"),
  getWindowMemory: () => invoke<WindowMemory>("get_window_memory"),
  saveWindowMemory: (state: WindowMemory) => invoke<null>("save_window_memory", { state }),
  getToday: () => invoke<DayReport>("get_today"),
  getHistory: (query: HistoryQuery) => invoke<HistoryEntry[]>("get_history", { query }),
  getSessionDetail: (s: SessionKey) =>
    invoke<SessionDetail | null>("get_session_detail", { sessionId: s.session_id, host: s.host }),
  openMainWindow: () => invoke<null>("open_main_window"),
  hidePopover: () => invoke<null>("hide_popover"),
  answerRequest: (requestId: string, host: string | null, answer: AnswerChoice, message: string | null, from: AnswerFrom) =>
    invoke<null>("answer_request", { requestId, host, answer, message, from }),
  answerQuestion: (requestId: string, host: string | null, answers: QuestionAnswer[], from: AnswerFrom) =>
    invoke<null>("answer_question", { requestId, host, answers, from }),
  // Talking back: an idle session's next prompt, a working one's stop (the engine's sentence on
  // refusal, as for an answer).
  sendPrompt: (s: SessionKey, text: string) => invoke<null>("send_prompt", { sessionId: s.session_id, host: s.host, text }),
  stopTurn: (s: SessionKey) => invoke<null>("stop_turn", { sessionId: s.session_id, host: s.host }),
  getAnswering: () => invoke<EffectiveChoice[]>("get_answering"),
  setAnswering: (agent: Agent, enabled: boolean, waitSecs: number) =>
    invoke<EffectiveChoice>("set_answering", { agent, enabled, waitSecs }),
};

export const on = {
  sessions: (f: (e: SessionEvent) => void) => listen<SessionEvent>(EVENTS.sessions, (e) => f(e.payload)),
  focus: (f: (e: FocusSession) => void) => listen<FocusSession>(EVENTS.focus, (e) => f(e.payload)),
  settings: (f: (s: AppSettings) => void) => listen<AppSettings>(EVENTS.settings, (e) => f(e.payload)),
  openSettings: (f: () => void) => listen<null>(EVENTS.openSettings, () => f()),
  installResult: (f: (r: InstallReport) => void) =>
    listen<InstallReport>(EVENTS.installResult, (e) => f(e.payload)),
  limits: (f: (l: PlanWindow[]) => void) => listen<PlanWindow[]>(EVENTS.limits, (e) => f(e.payload)),
};

export type { UnlistenFn };

/// A command's failure as the shell sends it ({code, message}), or anything else thrown.
export function errorMessage(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error) {
    return String((error as CommandError).message);
  }
  return String(error);
}
