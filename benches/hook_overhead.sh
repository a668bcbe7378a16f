#!/usr/bin/env bash
# Hook overhead as whole processes, with the daemon running, beside two baselines in the same run:
#   true                 the cost of starting any process
#   python3 hook.py      reads stdin and writes it to the same unix socket (how several other
#                        trackers do it)
#   agent-tray hook      parse, walk /proc, journal, send
# Each is fed the same recorded Claude PreToolUse payload on stdin.
#
# Usage: benches/hook_overhead.sh [path/to/agent-tray]   (default: target/release/agent-tray)
# RUNS=N sets the runs per command (default 300). Needs python3. Everything runs in a temp
# AGENT_TRAY_HOME; nothing of the user's is touched.
#
# With hyperfine installed (scripts/setup.sh --test installs it) a second, independent figure
# follows: `hyperfine -N` runs `true` and `agent-tray hook --agent claude` without a shell, stdin
# empty (so the hook takes its other path: parse error, one line to its log); ROUNDS rounds
# (default 5) of RUNS/5 runs each command, taking turns, and the median over all runs.
#
# A small harness rather than hyperfine: Debian 12's hyperfine cannot feed stdin without a shell.
# It posix_spawns each command with the payload file as stdin, waits, and times it; the three
# commands take turns so that machine noise falls on all of them alike.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$here/target/release/agent-tray}"
runs="${RUNS:-300}"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p agent-tray" >&2; exit 1; }

work="$(mktemp -d /tmp/hookbench.XXXXXX)"
export AGENT_TRAY_HOME="$work/tray" HOME="$work/home" CLAUDE_CONFIG_DIR="$work/claude" CODEX_HOME="$work/codex"
mkdir -p "$HOME" "$CLAUDE_CONFIG_DIR" "$CODEX_HOME"
"$bin" daemon >"$work/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do "$bin" list --json >/dev/null 2>&1 && break; sleep 0.05; done

python3 -c 'import json,sys; print(json.dumps(json.loads(open(sys.argv[1]).readlines()[2])["payload"]))' \
  "$here/tests/fixtures/claude/real-2.1.328/hooks.jsonl" >"$work/payload.json"

cat >"$work/hook.py" <<'PY'
import os, socket, sys
data = sys.stdin.buffer.read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(0.1)
s.connect(os.environ["AGENT_TRAY_HOME"] + "/run/agent-tray.sock")
s.sendall(data.replace(b"\n", b" ") + b"\n")
s.close()
PY

cat >"$work/harness.py" <<'PY'
import os, shutil, statistics, sys, time
payload, runs, binary, script = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
commands = {
    "true": [shutil.which("true")],
    "agent-tray": [binary, "hook", "--agent", "claude"],
    "python3": [shutil.which("python3"), script],
}
devnull = os.open(os.devnull, os.O_WRONLY)

def once(argv):
    fd = os.open(payload, os.O_RDONLY)
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_DUP2, fd, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status = os.waitpid(pid, 0)
    dt = time.perf_counter() - t
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return dt

for _ in range(20):
    for argv in commands.values():
        once(argv)
times = {name: [] for name in commands}
for _ in range(runs):
    for name, argv in commands.items():
        times[name].append(once(argv))
med = {n: statistics.median(v) for n, v in times.items()}
print(f"{runs} runs each, interleaved; payload: Claude PreToolUse ({os.path.getsize(payload)} bytes)")
print(f"{'command':<12} {'median':>9} {'p90':>9} {'x true':>7}")
for name in ("true", "agent-tray", "python3"):
    v = sorted(times[name])
    print(f"{name:<12} {med[name]*1e3:>7.3f}ms {v[int(len(v)*0.9)]*1e3:>7.3f}ms {med[name]/med['true']:>7.2f}")
print(f"agent-tray / python3: {med['agent-tray']/med['python3']:.3f}")
PY

python3 "$work/harness.py" "$work/payload.json" "$runs" "$bin" "$work/hook.py"
if command -v hyperfine >/dev/null 2>&1; then
  rounds="${ROUNDS:-5}"
  per=$(( runs / 5 > 10 ? runs / 5 : 10 ))
  for r in $(seq "$rounds"); do
    hyperfine -N --style none --warmup 20 --runs "$per" --export-json "$work/hf$r.json" \
      true "$bin hook --agent claude" >/dev/null 2>&1
  done
  python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
times = [[], []]
for r in range(1, rounds + 1):
    for i, res in enumerate(json.load(open(f"{work}/hf{r}.json"))["results"]):
        times[i] += res["times"]
m = [statistics.median(t) for t in times]
print(f"hyperfine -N, stdin empty, {rounds} rounds of {len(times[0]) // rounds} runs each, taking turns:")
print(f"{'true':<12} {m[0]*1e3:>7.3f}ms {1:>7.2f}")
print(f"{'agent-tray':<12} {m[1]*1e3:>7.3f}ms {m[1]/m[0]:>7.2f}")
PY
fi
echo "journal records written by the hook: $(cat "$AGENT_TRAY_HOME"/journal/*.jsonl | wc -l)"
echo "sessions the daemon holds: $("$bin" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
