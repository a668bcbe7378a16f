// Display formatting only (no session logic): how long a session has been in its state.
//
// The window counts up every second, so it formats here rather than asking Rust each tick. The
// rules are the core's (src/duration_text.rs, seconds precision), and the UI tests check this
// function against the table of examples a Rust test writes (tests/fixtures/duration_text.json).

/// `12s`, `3m 05s`, `1h 04m`, `2d 3h`, from whole seconds; negative reads as `0s`.
export function formatElapsed(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function secondsSince(iso: string, now: number): number {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : (now - t) / 1000;
}

/// A clock time ("14:02") for a row's "since": one formatter for every row. Each
/// `toLocaleTimeString` call builds an ICU formatter of its own in WebKit, and a window opening
/// with 50 rows formatted 50 of them before its first frame.
let clockFormat: Intl.DateTimeFormat | undefined;
export function clockTime(t: Date): string {
  clockFormat ??= new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });
  return clockFormat.format(t);
}

/// Oldest session first, then by id, then this machine's before a remote's with that id: the
/// core's order (Rust compares the strings byte by byte; `localeCompare` would go through an ICU
/// collator for every comparison, and need not agree).
export function byStartThenId(
  a: { session: { started_at: string; session_id: string; host?: string | null } },
  b: { session: { started_at: string; session_id: string; host?: string | null } },
): number {
  const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  const host = (h: string | null | undefined) => (h == null ? 0 : 1);
  return (
    order(a.session.started_at, b.session.started_at) ||
    order(a.session.session_id, b.session.session_id) ||
    host(a.session.host) - host(b.session.host) ||
    order(a.session.host ?? "", b.session.host ?? "")
  );
}
