"""Agent Tray, driven through its public CLI only:
  agent-tray daemon                 (paths from AGENT_TRAY_HOME; honours CLAUDE_CONFIG_DIR,
                                     CODEX_HOME, HOME, XDG_RUNTIME_DIR, AGENT_TRAY_SESSION_TTL)
  agent-tray install [--claude] [--codex] [--trust]
  agent-tray list --json            [{session_id, agent, state, cwd, pid, started_at, last_seen, state_since}]

Timeline polls `list --json` in a thread (every ~150 ms) and keeps every snapshot, so a
test can ask "when was this state first seen" and "which states did the session go
through" instead of sleeping fixed times.
"""
import json
import os
import re
import signal
import subprocess
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def tray_bin():
    b = os.environ.get("AGENT_TRAY_BIN") or os.path.join(REPO, "target", "debug", "agent-tray")
    return os.path.abspath(b)


class TrayError(AssertionError):
    pass


def _short(s, n=1500):
    s = s if isinstance(s, str) else repr(s)
    return s if len(s) <= n else s[:n] + f"... [{len(s) - n} more chars]"


class Tray:
    def __init__(self, world, binary=None):
        self.world = world
        self.bin = binary or tray_bin()
        self.daemon = None
        self._daemon_log = None
        self.env = dict(world.env)
        # The daemon's log level (e.g. AGENT_TRAY_LOG=debug) for post-mortems; hooks never see it.
        self.daemon_env = dict(self.env)
        if os.environ.get("AGENT_TRAY_LOG"):
            self.daemon_env["AGENT_TRAY_LOG"] = os.environ["AGENT_TRAY_LOG"]
        world.on_cleanup(self.stop_daemon)

    def check_binary(self):
        if not (os.path.isfile(self.bin) and os.access(self.bin, os.X_OK)):
            raise TrayError(f"agent-tray binary not found or not executable at {self.bin} "
                            "(build it, or set AGENT_TRAY_BIN)")

    def run(self, *args, timeout=20, check=True):
        self.check_binary()
        try:
            r = subprocess.run([self.bin, *args], env=self.env, capture_output=True, text=True,
                               timeout=timeout, cwd=self.world.root)
        except subprocess.TimeoutExpired as e:
            raise TrayError(f"`agent-tray {' '.join(args)}` did not finish within {timeout}s; "
                            f"stdout: {_short(e.stdout or '')!r} stderr: {_short(e.stderr or '')!r}")
        if check and r.returncode != 0:
            raise TrayError(f"`agent-tray {' '.join(args)}` exited {r.returncode}; "
                            f"stdout: {_short(r.stdout)!r}; stderr: {_short(r.stderr)!r}")
        return r

    def install(self, *flags):
        return self.run("install", *flags)

    # -- daemon -----------------------------------------------------------
    def start_daemon(self, ready_timeout=15):
        self.check_binary()
        log = self.world.path("logs", f"daemon-{int(time.time() * 1000)}.log")
        self._daemon_log = log
        f = open(log, "w")
        self.daemon = subprocess.Popen([self.bin, "daemon"], env=self.daemon_env, stdout=f, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=self.world.root, start_new_session=True)
        f.close()
        deadline = time.monotonic() + ready_timeout
        last = None
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise TrayError(f"`agent-tray daemon` exited {self.daemon.returncode} at start; log:\n{self.daemon_log()}")
            sessions, raw, err = self.list()
            if sessions is not None:
                return self.daemon.pid
            last = (raw, err)
            time.sleep(0.1)
        raise TrayError(f"`agent-tray list --json` never answered a JSON array within {ready_timeout}s of "
                        f"`agent-tray daemon` starting; last stdout {_short(last[0])!r} stderr {_short(last[1])!r}; "
                        f"daemon log:\n{self.daemon_log()}")

    def stop_daemon(self, kill=False):
        d, self.daemon = self.daemon, None
        if not d or d.poll() is not None:
            return
        try:
            d.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            d.wait(timeout=3)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait(timeout=3)

    def daemon_log(self, tail=3000):
        if not self._daemon_log or not os.path.exists(self._daemon_log):
            return "(no daemon log)"
        s = open(self._daemon_log, errors="replace").read()
        s = re.sub(r"\x1b\[[0-9;]*m", "", s)  # tracing's colours
        return s[-tail:]

    # -- list ---------------------------------------------------------------
    def list(self, timeout=5):
        """(sessions or None, stdout, error text)."""
        try:
            r = subprocess.run([self.bin, "list", "--json"], env=self.env, capture_output=True, text=True,
                               timeout=timeout, cwd=self.world.root)
        except subprocess.TimeoutExpired:
            return None, "", f"list --json timed out after {timeout}s"
        except OSError as e:
            return None, "", f"cannot run {self.bin}: {e}"
        if r.returncode != 0:
            return None, r.stdout, f"exit {r.returncode}: {r.stderr.strip()[:500]}"
        try:
            v = json.loads(r.stdout)
        except ValueError as e:
            return None, r.stdout, f"not JSON: {e}"
        if not isinstance(v, list):
            return None, r.stdout, "not a JSON array"
        return v, r.stdout, ""


KEY_FIELDS = ("session_id", "agent", "state", "cwd", "pid", "last_event", "end_reason", "transcript_path")


def compact(sessions):
    """The fields that matter for a failure message, one session per line."""
    if sessions is None:
        return "(no list)"
    if not sessions:
        return "[]"
    return "\n".join("  " + json.dumps({k: s.get(k) for k in KEY_FIELDS if k in s} if isinstance(s, dict) else s)
                     for s in sessions)


def same_path(a, b):
    if not a or not b:
        return False
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (TypeError, ValueError):
        return False


class Timeline:
    """Background poller of `list --json`. All times are time.monotonic()."""

    def __init__(self, tray, interval=0.15, source=None, source_name="`list --json`", explain=None):
        self.tray = tray
        # What the polls are called in a failure's text, and a callable whose text is added to it
        # (what another source said at that moment: the engine's own list beside the window's).
        self.source_name = source_name
        self.explain = explain
        self.interval = interval
        # What is polled: `list --json` by default; any callable returning (sessions or None,
        # raw text, error text) works (the window's rows: test_window.py).
        self.source = source or tray.list
        self.snaps = []  # (t, sessions or None, error)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="timeline")
        self.t0 = time.monotonic()
        tray.world.on_cleanup(self.stop)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.is_set():
            t = time.monotonic()
            sessions, raw, err = self.source()
            with self._lock:
                self.snaps.append((t, sessions, err or None))
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - t)))

    # -- queries ------------------------------------------------------------
    def latest(self):
        with self._lock:
            return self.snaps[-1] if self.snaps else (None, None, "no poll yet")

    def snapshots(self):
        with self._lock:
            return list(self.snaps)

    @staticmethod
    def matching(sessions, agent, cwd):
        return [s for s in sessions or [] if isinstance(s, dict) and s.get("agent") == agent and same_path(s.get("cwd"), cwd)]

    def history(self, agent, cwd, since=None):
        """{session_id: [(t, state), ...]} with consecutive duplicates collapsed."""
        out = {}
        for t, sessions, _ in self.snapshots():
            if since is not None and t < since:
                continue
            for s in self.matching(sessions, agent, cwd):
                h = out.setdefault(s.get("session_id"), [])
                if not h or h[-1][1] != s.get("state"):
                    h.append((t, s.get("state")))
        return out

    def describe(self, agent, cwd):
        """Human text: what list --json last showed, and the states seen for agent+cwd."""
        t, sessions, err = self.latest()
        hist = self.history(agent, cwd)
        lines = []
        if sessions is None:
            lines.append(f"last {self.source_name} failed: {err}")
        else:
            lines.append(f"last {self.source_name} ({len(sessions)} session(s), key fields):\n{_short(compact(sessions), 2500)}")
        if hist:
            for sid, h in hist.items():
                lines.append(f"states seen for {agent} session {sid}: " +
                             " -> ".join(f"{st}@{tt - self.t0:.1f}s" for tt, st in h))
        else:
            lines.append(f"no {agent} session with cwd={cwd} ever seen (over {len(self.snapshots())} polls)")
        errs = [e for _, _, e in self.snapshots() if e]
        if errs:
            lines.append(f"{len(errs)} failed polls, e.g. {errs[-1]!r}")
        if self.tray._daemon_log:
            lines.append("daemon log (tail):\n" + self.tray.daemon_log(tail=1500).rstrip())
        if self.explain:
            try:
                lines.append(self.explain())
            except Exception as e:  # a diagnosis must never hide the failure it explains
                lines.append(f"(no more detail: {e!r})")
        return "\n".join(lines)

    def wait(self, agent, cwd, pred, what, timeout, since=None):
        """Waits until a session for agent+cwd satisfies pred(session) in a poll taken at or after
        `since`; returns (t, session). Raises TrayError with expected vs. seen on timeout."""
        since = time.monotonic() if since is None else since
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for t, sessions, _ in self.snapshots()[seen:]:
                seen += 1
                if t < since:
                    continue
                for s in self.matching(sessions, agent, cwd):
                    if pred(s):
                        return t, s
            if time.monotonic() > deadline:
                raise TrayError(f"expected: {agent} session (cwd {cwd}) {what} within {timeout:.0f}s "
                                f"[t={time.monotonic() - self.t0:.1f}s]\n" + self.describe(agent, cwd))
            time.sleep(0.05)

    def wait_state(self, agent, cwd, state, timeout, since=None, what=None):
        states = (state,) if isinstance(state, str) else tuple(state)
        return self.wait(agent, cwd, lambda s: s.get("state") in states,
                         what or f"in state {'/'.join(states)}", timeout, since)
