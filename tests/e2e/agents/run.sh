#!/usr/bin/env bash
# End-to-end tests of Agent Tray with the REAL Claude Code and Codex CLIs, driven in tmux
# against loopback mock model servers. Builds nothing: takes the agent-tray binary from
# $AGENT_TRAY_BIN (default: <repo>/target/debug/agent-tray).
#
#   tests/e2e/agents/run.sh                       # everything
#   tests/e2e/agents/run.sh test_harness          # only the harness self-tests (no agent-tray needed)
#   tests/e2e/agents/run.sh -k claude test_hooks  # a subset
#   AGENT_E2E_KEEP=1 ...                          # keep the per-test worlds under /var/tmp/agent-tray-e2e
#
# The last line printed is always `N passed, N failed`; the exit status is non-zero on failure.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export AGENT_TRAY_BIN="${AGENT_TRAY_BIN:-$repo/target/debug/agent-tray}"
case "$AGENT_TRAY_BIN" in /*) ;; *) AGENT_TRAY_BIN="$PWD/$AGENT_TRAY_BIN" ;; esac

for tool in tmux python3 npm ps; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "run.sh: $tool is required" >&2
    echo "0 passed, 1 failed"
    exit 1
  fi
done

if ! bins="$("$here/install.sh")"; then
  echo "run.sh: installing the pinned agents failed" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
eval "$bins"
export CLAUDE_BIN CODEX_BIN GEMINI_JS COPILOT_BIN OPENCODE_BIN OPENCODE_CONFIG_SEED QWEN_JS PI_JS DROID_BIN CLINE_BIN KILO_BIN
echo "claude: $("$CLAUDE_BIN" --version 2>/dev/null) ($CLAUDE_BIN)"
echo "codex:  $("$CODEX_BIN" --version 2>/dev/null) ($CODEX_BIN)"
echo "gemini: $(node "$GEMINI_JS" --version 2>/dev/null) ($GEMINI_JS)"
# Their versions from the installed packages: a first `copilot --version` would unpack the CLI
# (~235 MB) into the caller's own ~/.cache.
pkg_version() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$1" 2>/dev/null; }
echo "copilot: $(pkg_version "${COPILOT_BIN%/*}/../copilot/package.json") ($COPILOT_BIN)"
echo "opencode: $(pkg_version "${OPENCODE_BIN%/bin/*}/package.json") ($OPENCODE_BIN)"
echo "qwen: $(pkg_version "${QWEN_JS%/*}/package.json") ($QWEN_JS)"
echo "pi: $(pkg_version "${PI_JS%/dist/*}/package.json") ($PI_JS)"
echo "droid: $("$DROID_BIN" --version 2>/dev/null) ($DROID_BIN)"
echo "cline: $(pkg_version "${CLINE_BIN%/bin/*}/package.json") ($CLINE_BIN)"
echo "kilo: $(pkg_version "${KILO_BIN%/bin/*}/package.json") ($KILO_BIN)"
if [ -x "$AGENT_TRAY_BIN" ]; then
  echo "agent-tray: $AGENT_TRAY_BIN"
else
  echo "agent-tray: NOT FOUND at $AGENT_TRAY_BIN (scenario tests will fail; harness self-tests still run)"
fi

cd "$here"
exec python3 -u runner.py "$@"
