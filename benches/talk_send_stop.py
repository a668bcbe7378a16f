#!/usr/bin/env python3
"""Our part of a send and a stop (issue 40): from `agent-tray send` (or `stop`) being started to
the request frame (`turn/start`, `turn/interrupt`) reaching the agent's interface, here Codex's
background server.

The same stand-in for Codex's managed app-server as benches/codex_server_answer.py serves one
idle thread; each round runs `agent-tray send THREAD "prompt k"` (the stand-in answers the
`turn/start` and reports the turn started), then `agent-tray stop THREAD` (it answers the
`turn/interrupt` and reports the turn interrupted), and takes the time from starting the CLI to
the frame arriving, and to the CLI exiting (the agent's reply included). Whole processes, as a
user's CLI call is; everything in a temp home.

Usage: benches/talk_send_stop.py [path/to/agent-tray]   (default target/release/agent-tray)
RUNS=N sets the rounds (default 100). Prints p50/p90/p99 in ms.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codex_server_answer import THREAD, FakeServer, read_frame  # noqa: E402


class TalkServer(FakeServer):
    """Answers `turn/start` and `turn/interrupt` as Codex 0.171 does, noting when each came."""

    def __init__(self, codex_home, cwd):
        self.arrived = {}  # "send k" / "stop k" -> monotonic time the frame arrived
        self.turns = 0
        super().__init__(codex_home, cwd)

    def serve(self, conn):
        try:
            while True:
                op, data = read_frame(conn)
                if op == 8:
                    return
                if op != 1:
                    continue
                m = json.loads(data)
                method = m.get("method")
                now = time.monotonic()
                if method == "initialize":
                    self.send({"id": m["id"], "result": {"userAgent": "fake"}})
                elif method == "thread/loaded/list":
                    self.send({"id": m["id"], "result": {"data": []}})
                    self.send({"method": "thread/started", "params": {"thread": {
                        "id": THREAD, "cwd": self.cwd, "ephemeral": False, "parentThreadId": None}}})
                    # Activity makes the feed subscribe (as a TUI's first turn does).
                    self.send({"method": "thread/status/changed", "params": {
                        "threadId": THREAD, "status": {"type": "active", "activeFlags": []}}})
                elif method == "thread/resume":
                    self.send({"id": m["id"], "result": {"thread": {"id": THREAD, "cwd": self.cwd, "ephemeral": False}}})
                    self.send({"method": "thread/status/changed", "params": {
                        "threadId": THREAD, "status": {"type": "idle"}}})
                    self.subscribed.set()
                elif method == "turn/start":
                    self.turns += 1
                    self.arrived[f"send {self.turns}"] = now
                    turn = f"turn-{self.turns}"
                    self.send({"id": m["id"], "result": {"turn": {"id": turn, "status": "inProgress"}}})
                    self.send({"method": "turn/started", "params": {"threadId": THREAD, "turn": {"id": turn}}})
                elif method == "turn/interrupt":
                    self.arrived[f"stop {self.turns}"] = now
                    self.send({"id": m["id"], "result": {}})
                    self.send({"method": "turn/completed", "params": {"threadId": THREAD, "turn": {
                        "id": m["params"]["turnId"], "status": "interrupted"}}})
        except (ConnectionError, OSError):
            return


def wait_state(binary, env, state, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run([binary, "list", "--json"], env=env, capture_output=True, text=True)
        rows = [s for s in json.loads(out.stdout or "[]") if s["session_id"] == THREAD]
        if rows and rows[0]["state"] == state and (rows[0]["can_send"] or rows[0]["can_stop"]):
            return
        time.sleep(0.005)
    sys.exit(f"the session never became {state}")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "release", "agent-tray")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} not found: build it (cargo build --release -p agent-tray) or pass its path")
    runs = int(os.environ.get("RUNS", "100"))
    tmp = tempfile.mkdtemp(prefix="talk-bench-")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(tmp, "home"),
           "AGENT_TRAY_HOME": os.path.join(tmp, "tray"), "XDG_RUNTIME_DIR": os.path.join(tmp, "run"),
           "CODEX_HOME": os.path.join(tmp, "codex"), "CLAUDE_CONFIG_DIR": os.path.join(tmp, "claude")}
    for d in ("home", "tray", "run", "codex", "claude", "proj"):
        os.makedirs(os.path.join(tmp, d), mode=0o700)
    server = TalkServer(env["CODEX_HOME"], os.path.join(tmp, "proj"))
    daemon = subprocess.Popen([binary, "daemon"], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not server.subscribed.wait(30):
            sys.exit("the engine's app-server feed never subscribed to the fake server's thread")
        got = {"send": [], "stop": []}
        for k in range(1, runs + 1):
            for kind, argv, state in (("send", ["send", THREAD, f"prompt {k}"], "idle"),
                                      ("stop", ["stop", THREAD], "working")):
                wait_state(binary, env, state)
                t0 = time.monotonic()
                subprocess.run([binary, *argv], env=env, check=True, stdout=subprocess.DEVNULL)
                t_exit = time.monotonic()
                key = f"{kind} {k}"
                while key not in server.arrived and time.monotonic() - t0 < 5:
                    time.sleep(0.0005)
                if key not in server.arrived:
                    sys.exit(f"no {kind} frame in round {k}")
                got[kind].append((server.arrived[key] - t0, t_exit - t0))
        pct = lambda xs, p: xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000
        print(f"{runs} sends and {runs} stops through Codex's server route ({binary})")
        for kind in ("send", "stop"):
            frames = sorted(t for t, _ in got[kind])
            exits = sorted(e for _, e in got[kind])
            print(f"  `{kind}` started -> frame at the server: p50 {pct(frames, 50):.1f} ms, "
                  f"p90 {pct(frames, 90):.1f} ms, p99 {pct(frames, 99):.1f} ms")
            print(f"  `{kind}` started -> `{kind}` exited:      p50 {pct(exits, 50):.1f} ms, "
                  f"p90 {pct(exits, 90):.1f} ms, p99 {pct(exits, 99):.1f} ms")
    finally:
        daemon.terminate()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        server.sock.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
