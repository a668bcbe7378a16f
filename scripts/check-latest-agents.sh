#!/usr/bin/env bash
# Runs the whole real-agent suite (tests/e2e/agents) against the NEWEST published Claude Code
# and Codex, installed into a prefix of their own (tests/e2e/agents/.versions/latest), so the
# pinned install that CI uses is never touched. Builds nothing: takes agent-tray from
# $AGENT_TRAY_BIN (default target/debug/agent-tray).
#
#   scripts/check-latest-agents.sh                 # every test, newest claude-code and codex
#   scripts/check-latest-agents.sh -k codex        # a subset (arguments go to run.sh)
#   AGENT_E2E_CLAUDE_VERSION=2.1.330 scripts/check-latest-agents.sh   # hold one back
#
# Prints the versions it ran and ends with run.sh's `N passed, N failed` line; when everything
# passes, those versions are candidates for the pins in tests/e2e/agents/package.json.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export AGENT_E2E_CLAUDE_VERSION="${AGENT_E2E_CLAUDE_VERSION:-latest}"
export AGENT_E2E_CODEX_VERSION="${AGENT_E2E_CODEX_VERSION:-latest}"
export AGENT_E2E_PREFIX="${AGENT_E2E_PREFIX:-$root/tests/e2e/agents/.versions/latest}"
export AGENT_TRAY_BIN="${AGENT_TRAY_BIN:-$root/target/debug/agent-tray}"
pins="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["dependencies"]; print(d["@anthropic-ai/claude-code"], d["@openai/codex"])' "$root/tests/e2e/agents/package.json")"
echo "check-latest-agents: pinned claude-code ${pins% *}, codex ${pins#* }; running the newest published"
"$root/tests/e2e/agents/run.sh" "$@"
status=$?
echo "check-latest-agents: exit status $status"
exit $status
