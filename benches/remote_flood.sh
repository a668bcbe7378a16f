#!/usr/bin/env bash
# A remote that floods: what it costs this machine, measured on the release engine.
#  1. a local hook reaching `list`: a real `agent-tray hook --agent claude` process is started
#     with a UserPromptSubmit payload, and the socket's `list` is polled until its session shows;
#     p50/p99 of the time from the spawn, first with no remote (the baseline), then while a
#     remote (a fake `ssh`, given by AGENT_TRAY_SSH) sends change lines as fast as its pipe takes
#     them (the goal: p99 within 50 ms);
#  2. the engine's CPU over five seconds of that flood, from /proc (the goal: under half a core).
#
# Usage: benches/remote_flood.sh [path/to/agent-tray]   (default: target/release/agent-tray)
# RUNS=N sets the hooks per phase (default 200). Needs python3. Everything runs in a temp
# AGENT_TRAY_HOME; nothing of the user's is touched.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$here/target/release/agent-tray}"
runs="${RUNS:-200}"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p agent-tray" >&2; exit 1; }

work="$(mktemp -d /tmp/floodbench.XXXXXX)"
export AGENT_TRAY_HOME="$work/tray" HOME="$work/home" CLAUDE_CONFIG_DIR="$work/claude" CODEX_HOME="$work/codex"
export AGENT_TRAY_SSH="$work/fake-ssh"
mkdir -p "$HOME" "$CLAUDE_CONFIG_DIR" "$CODEX_HOME"
daemon=""
trap '[ -n "$daemon" ] && kill $daemon 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# The hostile remote: a snapshot of 300 sessions, then change lines forever (each a real change).
cat >"$AGENT_TRAY_SSH" <<'PY'
#!/usr/bin/env python3
import json, sys
out = sys.stdout
def session(i, n):
    return {"session_id": "flood-%d" % i, "agent": "claude", "state": "working", "cwd": "/srv/app%d" % i,
            "branch": "main", "started_at": "2026-11-30T10:00:00Z",
            "last_seen": "2026-11-30T10:%02d:%02d.%06dZ" % (n // 60 % 60, n % 60, n % 1000000),
            "state_since": "2026-11-30T10:04:00Z", "title": "busy", "tmux": "work:@1.%2"}
out.write(json.dumps({"kind": "snapshot", "protocol": 1, "sessions": [session(i, 0) for i in range(300)], "ended": []}) + "\n")
out.flush()
n = 0
while True:
    out.write("".join(json.dumps({"kind": "changed", "session": session(k % 300, n + k)}) + "\n" for k in range(2000)))
    n += 2000
PY
chmod +x "$AGENT_TRAY_SSH"

cat >"$work/bench.py" <<'PY'
import json, os, socket, subprocess, sys, time
phase, binary, runs, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sock_path = os.path.join(os.environ["AGENT_TRAY_HOME"], "run", "agent-tray.sock")

def request(obj):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall((json.dumps({"v": 1, **obj}) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)

def cpu():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

if phase == "flood":
    c0, t0 = cpu(), time.monotonic()
    time.sleep(5)
    print(f"  engine CPU over 5 s of the flood: {(cpu() - c0) / (time.monotonic() - t0) * 100:.0f} % of a core")
lat = []
for i in range(runs):
    sid = f"{phase}-{i}"
    payload = json.dumps({"session_id": sid, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp/api",
                          "prompt": "go", "transcript_path": f"/tmp/.claude/projects/p/{sid}.jsonl"}).encode()
    t = time.perf_counter()
    hook = subprocess.Popen([binary, "hook", "--agent", "claude"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hook.stdin.write(payload); hook.stdin.close()
    seen = False
    while not seen and time.perf_counter() - t < 5:
        seen = any(s["session_id"] == sid for s in request({"op": "list"})["result"]["sessions"])
    dt = time.perf_counter() - t
    hook.wait(timeout=5)
    assert seen, f"{sid} never showed"
    lat.append(dt)
v = sorted(lat)
q = lambda p: v[min(len(v) - 1, int(len(v) * p))] * 1e3
print(f"  {phase:<5} local hook spawned -> in list: {runs} hooks  p50 {q(0.5):.1f} ms  p99 {q(0.99):.1f} ms  max {v[-1]*1e3:.1f} ms")
PY

"$bin" daemon >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do "$bin" list --json >/dev/null 2>&1 && break; sleep 0.05; done
echo "a remote flooding change lines ($(nproc) cores, $(uname -m)):"
python3 "$work/bench.py" quiet "$bin" "$runs" "$daemon"
"$bin" remote add flood flood.example >/dev/null
for _ in $(seq 200); do "$bin" list --json | grep -q '"host": *"flood"' && break; sleep 0.05; done
"$bin" list --json | grep -q '"host": *"flood"' || { echo "the remote never connected:"; cat "$work/daemon.log"; exit 1; }
python3 "$work/bench.py" flood "$bin" "$runs" "$daemon"
