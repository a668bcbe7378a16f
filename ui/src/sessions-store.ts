// The sessions a page shows, kept current: one snapshot, then the events after it. Shared by the
// window and the popover, which used to merge snapshots and events with code of their own and
// had drifted apart (the popover's merge only ever added rows, so a session removed while it
// started stayed on screen).
//
// Ordering: snapshots and events carry the registry's sequence number. A snapshot can be computed
// before an event that reaches the page first, and an event can be older than the snapshot
// shown; whatever is older than what the page shows is dropped, so a stale "working" never
// replaces a newer "needs you" and a removed session never comes back.
//
// The map is changed in place, never replaced, so a page may keep a reference to it.
//
// Rows are keyed by host and session id ([`sessionKey`]), never by id alone: ids are unique per
// host only, and a remote chooses its own, so a remote announcing the id of a local session must
// get a row of its own and never take the local one's place, selection or actions.
import type { Session, SessionEvent, SessionKey, SessionView } from "./bindings";

/// The one key of a session on the page (maps, the selection, DOM data attributes): its host
/// (null for this machine) and its id, encoded so that no id, whatever characters a remote
/// puts in it, can make two sessions' keys equal.
export function sessionKey(host: string | null | undefined, sessionId: string): string {
  return JSON.stringify([host ?? null, sessionId]);
}

/// The key of a session.
export function keyOf(s: Pick<Session, "host" | "session_id">): string {
  return sessionKey(s.host, s.session_id);
}

/// A key back as the shell's `SessionKey` (what the window's memory keeps); null for anything
/// that is not a key.
export function parseKey(key: string): SessionKey | null {
  try {
    const parsed: unknown = JSON.parse(key);
    if (!Array.isArray(parsed) || parsed.length !== 2) return null;
    const [host, sessionId] = parsed as unknown[];
    if ((host !== null && typeof host !== "string") || typeof sessionId !== "string") return null;
    return { host, session_id: sessionId };
  } catch {
    return null;
  }
}

/// What a page needs of a snapshot: its number and its rows.
export interface SessionsSnapshot {
  seq: number;
  sessions: SessionView[];
}

export class SessionsStore {
  /// The rows shown, by session key (host and id).
  readonly sessions = new Map<string, SessionView>();
  /// The sequence number of the snapshot shown (-1 before the first one).
  private shownSeq = -1;
  /// The sequence number of the last event applied to each row since that snapshot.
  private readonly eventSeq = new Map<string, number>();

  /// Whether `e` is new enough to be applied (nothing older than what is shown is).
  accepts(e: SessionEvent): boolean {
    if (e.seq < this.shownSeq) return false;
    const last = this.eventSeq.get(idOf(e));
    return last === undefined || e.seq >= last;
  }

  /// Applies one event unless it is older than what is shown; true when it was applied.
  applyEvent(e: SessionEvent): boolean {
    if (!this.accepts(e)) return false;
    const id = idOf(e);
    this.eventSeq.set(id, e.seq);
    if (e.kind === "upsert") this.sessions.set(id, e.view);
    else this.sessions.delete(id);
    return true;
  }

  /// Shows a snapshot unless it is older than the one shown: its rows replace the page's, except
  /// rows changed (or removed) by events newer than it, which keep what those events said.
  /// True when it was taken.
  applySnapshot(snap: SessionsSnapshot): boolean {
    if (snap.seq < this.shownSeq) return false;
    const next = new Map<string, SessionView>();
    for (const v of snap.sessions) next.set(keyOf(v.session), v);
    for (const [id, seq] of this.eventSeq) {
      if (seq <= snap.seq) {
        this.eventSeq.delete(id);
        continue;
      }
      const current = this.sessions.get(id);
      if (current) next.set(id, current);
      else next.delete(id);
    }
    this.sessions.clear();
    for (const [id, v] of next) this.sessions.set(id, v);
    this.shownSeq = snap.seq;
    return true;
  }
}

function idOf(e: SessionEvent): string {
  return e.kind === "upsert" ? keyOf(e.view.session) : sessionKey(e.host, e.session_id);
}
