#!/usr/bin/env python3
"""Our part of a send and a stop typed into a terminal (issue 40): from `agent-tray send` (or
`stop`) being started to the keys arriving at the agent in its tmux pane.

A stand-in agent runs in a private tmux server's pane: it draws Claude Code's idle prompt box
(`❯` and a no-break space between two rules), reads its terminal raw, and notes when a bracketed
paste followed by Enter (a prompt) or a lone Esc (a stop) arrives. It is registered with the
engine as an idle Claude session with its own pid, so every send runs the whole tmux route: the
pane read (`display-message`), the process checks (`/proc`), the screen read (`capture-pane`),
then the one tmux command list that pastes and presses Enter. Whole CLI processes, as a user's
call is; everything in a temp home and a private tmux server, ended by pid.

Usage: benches/talk_tmux.py [path/to/agent-tray]   (default target/release/agent-tray)
RUNS=N sets the rounds (default 100). Prints p50/p90/p99 in ms.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

AGENT = r'''
import os, sys, time, tty
log = sys.argv[1]
def draw():
    sys.stdout.write("\x1b[2J\x1b[H\x1b[?2004h● ok\r\n\r\n" + "─" * 60 + "\r\n❯\u00a0\r\n" + "─" * 60 + "\r\n  ⏸ manual mode on\r\n")
    sys.stdout.flush()
tty.setraw(0)
draw()
with open(log, "a") as f:
    f.write("ready\n")
buf = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    now = time.monotonic()
    if os.environ.get("BENCH_DEBUG"):
        with open(log + ".raw", "a") as f:
            f.write(repr(chunk) + "\n")
    if chunk == b"\x1b":
        with open(log, "a") as f:
            f.write(f"stop {now}\n")
        continue
    buf += chunk
    if b"\x1b[201~" in buf and buf.endswith(b"\r"):
        with open(log, "a") as f:
            f.write(f"send {now}\n")
        buf = b""
        draw()
'''


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "release", "agent-tray")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} not found: build it (cargo build --release -p agent-tray) or pass its path")
    if not shutil.which("tmux"):
        sys.exit("tmux is needed: apt install tmux")
    runs = int(os.environ.get("RUNS", "100"))
    tmp = tempfile.mkdtemp(prefix="talk-tmux-bench-")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(tmp, "home"),
           "AGENT_TRAY_HOME": os.path.join(tmp, "tray"), "XDG_RUNTIME_DIR": os.path.join(tmp, "run"),
           "CODEX_HOME": os.path.join(tmp, "codex"), "CLAUDE_CONFIG_DIR": os.path.join(tmp, "claude"),
           "TMUX_TMPDIR": os.path.join(tmp, "tmux"), "LANG": "C.UTF-8"}
    for d in ("home", "tray", "run", "codex", "claude", "tmux"):
        os.makedirs(os.path.join(tmp, d), mode=0o700)
    script, log = os.path.join(tmp, "agent.py"), os.path.join(tmp, "agent.log")
    with open(script, "w") as f:
        f.write(AGENT)
    tmux = ["tmux", "-L", "talk-bench", "-f", "/dev/null"]
    daemon = subprocess.Popen([binary, "daemon"], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tmux_pid = None
    try:
        subprocess.run(tmux + ["new-session", "-d", "-s", "bench", "-x", "120", "-y", "30",
                               f"exec python3 {script} {log}"], env=env, check=True)
        tmux_pid = int(subprocess.run(tmux + ["display-message", "-p", "#{pid}"], env=env,
                                      capture_output=True, text=True).stdout.strip())
        pid = subprocess.run(tmux + ["display-message", "-p", "-t", "bench", "#{pane_pid}"], env=env,
                             capture_output=True, text=True).stdout.strip()
        observe = lambda event: subprocess.run(
            [binary, "observe", "--session", "bench", "--agent", "claude", "--event", event,
             "--pid", pid, "--cwd", tmp], env=env, check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            observe("Stop")
            out = subprocess.run([binary, "list", "--json"], env=env, capture_output=True, text=True)
            rows = [s for s in json.loads(out.stdout or "[]") if s["session_id"] == "bench"]
            if rows and rows[0]["can_send"]:
                break
            time.sleep(0.1)
        else:
            sys.exit("the stand-in agent's session never took a send (no tmux place?)")
        while not (os.path.exists(log) and "ready" in open(log).read()):
            if time.monotonic() > deadline:
                sys.exit("the stand-in agent never drew its prompt box")
            time.sleep(0.05)
        got = {"send": [], "stop": []}
        for k in range(1, runs + 1):
            for kind, argv, event in (("send", ["send", "bench", f"prompt {k}"], "Stop"),
                                      ("stop", ["stop", "bench"], "UserPromptSubmit")):
                observe(event)
                seen = open(log).read().count(kind) if os.path.exists(log) else 0
                t0 = time.monotonic()
                r = subprocess.run([binary, *argv], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                t_exit = time.monotonic()
                if r.returncode != 0:
                    sys.exit(f"{kind} {k} refused: {r.stderr.strip()}")
                arrived = None
                while arrived is None and time.monotonic() - t0 < 5:
                    lines = [l.split() for l in open(log).read().splitlines() if l.startswith(kind)]
                    if len(lines) > seen:
                        arrived = float(lines[-1][1])
                    else:
                        time.sleep(0.0005)
                if arrived is None:
                    sys.exit(f"no {kind} at the stand-in in round {k}")
                got[kind].append((arrived - t0, t_exit - t0))
            observe("Stop")
        pct = lambda xs, p: xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000
        print(f"{runs} sends and {runs} stops typed into a tmux pane ({binary})")
        for kind in ("send", "stop"):
            keys = sorted(t for t, _ in got[kind])
            exits = sorted(e for _, e in got[kind])
            print(f"  `{kind}` started -> keys at the agent: p50 {pct(keys, 50):.1f} ms, "
                  f"p90 {pct(keys, 90):.1f} ms, p99 {pct(keys, 99):.1f} ms")
            print(f"  `{kind}` started -> `{kind}` exited:  p50 {pct(exits, 50):.1f} ms, "
                  f"p90 {pct(exits, 90):.1f} ms, p99 {pct(exits, 99):.1f} ms")
    finally:
        daemon.terminate()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        subprocess.run(tmux + ["kill-server"], env=env, stderr=subprocess.DEVNULL)
        if tmux_pid:
            try:
                os.kill(tmux_pid, 9)
            except OSError:
                pass
        if not os.environ.get("BENCH_DEBUG"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)


if __name__ == "__main__":
    main()
