#!/usr/bin/env bash
# The status-line bridge against the user's own status line alone, as whole processes, with the
# daemon running (so the bridge's send happens), one run of hyperfine:
#   user line            a small status-line script: reads its input, prints one line
#   bridge + user line   `agent-tray status-line --agent claude --then <script>`: reads the
#                        input, sends the context and windows to the engine, runs the script
# Both are fed the recorded Claude Code status-line input (a plan login's, with its windows).
#
# Usage: benches/status_line.sh [path/to/agent-tray]   (default: target/release/agent-tray)
# RUNS=N sets the runs per command (default 300). Needs hyperfine. Everything runs in a temp
# AGENT_TRAY_HOME; nothing of the user's is touched. hyperfine (1.15 has no --input) runs each
# command through `sh -c` to redirect stdin and subtracts the shell's own start, measured first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$here/target/release/agent-tray}"
runs="${RUNS:-300}"
[ -x "$bin" ] || { echo "build it first: cargo build --release -p agent-tray" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "needs hyperfine (scripts/setup.sh --test)" >&2; exit 1; }

work="$(mktemp -d /tmp/statusbench.XXXXXX)"
export AGENT_TRAY_HOME="$work/tray" HOME="$work/home" CLAUDE_CONFIG_DIR="$work/claude" CODEX_HOME="$work/codex"
mkdir -p "$HOME" "$CLAUDE_CONFIG_DIR" "$CODEX_HOME"
"$bin" daemon >"$work/daemon.log" 2>&1 &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do "$bin" list --json >/dev/null 2>&1 && break; sleep 0.05; done

# The recorded input, its windows resetting in the future (so the engine keeps them).
python3 - "$here/tests/fixtures/claude/real-2.1.332/status-line-oauth-after-turn.json" "$work/input.json" <<'EOF'
import json, sys, time
doc = json.load(open(sys.argv[1]))
now = int(time.time())
doc["rate_limits"]["five_hour"]["resets_at"] = now + 5400
doc["rate_limits"]["seven_day"]["resets_at"] = now + 3 * 86400
json.dump(doc, open(sys.argv[2], "w"))
EOF
cat >"$work/my-line.sh" <<'EOF'
#!/bin/sh
input=$(cat)
printf '\033[32m%s\033[0m\n' "my line: ${#input} bytes"
EOF
chmod +x "$work/my-line.sh"

hyperfine --warmup 20 --runs "$runs" --export-json "$work/result.json" \
  -n "user line" "$work/my-line.sh < $work/input.json > /dev/null" \
  -n "bridge + user line" "$bin status-line --agent claude --then $work/my-line.sh < $work/input.json > /dev/null"

python3 - "$work/result.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
user, bridge = r["user line"], r["bridge + user line"]
mu, mb = user["median"] * 1000, bridge["median"] * 1000
print(f"user line alone: median {mu:.2f} ms; bridge + user line: median {mb:.2f} ms; "
      f"added {mb - mu:.2f} ms; ratio {mb / mu:.2f}x")
EOF
# The engine heard it: the session and its windows are there.
"$bin" limits | head -2
