#!/usr/bin/env bash
# Runs the real-agent suite (tests/e2e/agents) against the NEWEST published Claude Code, Codex,
# Gemini CLI, GitHub Copilot CLI, OpenCode, Qwen Code, Pi, Factory Droid, Cline CLI and Kilo Code CLI, installed into
# folders of their own under tests/e2e/agents/.versions/ (latest/, latest-more/, latest-gemini/,
# latest-qwen/, latest-pi/, latest-droid/, latest-cline/, latest-kilo/), so the pinned installs and
# lock files that CI uses are never touched. Builds nothing: takes agent-tray from
# $AGENT_TRAY_BIN (default target/debug/agent-tray).
#
#   scripts/check-latest-agents.sh                         # every test, all seven agents at their newest
#   scripts/check-latest-agents.sh -k codex                # a subset (arguments go to run.sh)
#   AGENT_E2E_LATEST=gemini scripts/check-latest-agents.sh test_gemini   # only Gemini at its newest
#   AGENT_E2E_LATEST=copilot,opencode scripts/check-latest-agents.sh test_copilot test_opencode
#   AGENT_E2E_CLAUDE_VERSION=2.1.330 scripts/check-latest-agents.sh    # hold one back
#
# AGENT_E2E_LATEST lists the agents to take at their newest (default: all seven); the others stay
# at their pins, in the pinned folders. An AGENT_E2E_<AGENT>_VERSION already set wins over
# `latest`. Prints the pinned and the newest versions, then run.sh's output, ending with its
# `N passed, N failed` line; when everything passes, those versions are candidates for the pins
# (tests/e2e/agents/package.json, gemini/package.json, more/package.json, qwen/package.json,
# pi/package.json, droid/package.json, cline/package.json, kilo/package.json).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
e2e="$root/tests/e2e/agents"
latest=",${AGENT_E2E_LATEST:-claude,codex,gemini,copilot,opencode,qwen,pi,droid,cline,kilo},"
wants() { case "$latest" in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

pin() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"][sys.argv[2]])' "$e2e/$1" "$2"; }
newest() { npm view "$1@latest" version 2>/dev/null || echo "?"; }
show() { # agent, package, pin file
  local p n
  p="$(pin "$3" "$2")"
  if wants "$1"; then n="$(newest "$2")"; echo "check-latest-agents: $1 ($2): pinned $p, newest $n"
  else echo "check-latest-agents: $1 ($2): pinned $p (kept)"; fi
}
show claude @anthropic-ai/claude-code package.json
show codex @openai/codex package.json
show gemini @google/gemini-cli gemini/package.json
show copilot @github/copilot more/package.json
show opencode opencode-ai more/package.json
show qwen @qwen-code/qwen-code qwen/package.json
show pi @mariozechner/pi-coding-agent pi/package.json
show droid droid droid/package.json
show cline cline cline/package.json
show kilo @kilocode/cli kilo/package.json

if wants claude || wants codex; then
  wants claude && export AGENT_E2E_CLAUDE_VERSION="${AGENT_E2E_CLAUDE_VERSION:-latest}"
  wants codex && export AGENT_E2E_CODEX_VERSION="${AGENT_E2E_CODEX_VERSION:-latest}"
  export AGENT_E2E_PREFIX="${AGENT_E2E_PREFIX:-$e2e/.versions/latest}"
fi
if wants copilot || wants opencode; then
  wants copilot && export AGENT_E2E_COPILOT_VERSION="${AGENT_E2E_COPILOT_VERSION:-latest}"
  wants opencode && export AGENT_E2E_OPENCODE_VERSION="${AGENT_E2E_OPENCODE_VERSION:-latest}"
  export AGENT_E2E_MORE_PREFIX="${AGENT_E2E_MORE_PREFIX:-$e2e/.versions/latest-more}"
fi
if wants gemini; then
  export AGENT_E2E_GEMINI_VERSION="${AGENT_E2E_GEMINI_VERSION:-latest}"
  export AGENT_E2E_GEMINI_PREFIX="${AGENT_E2E_GEMINI_PREFIX:-$e2e/.versions/latest-gemini}"
fi
if wants qwen; then
  export AGENT_E2E_QWEN_VERSION="${AGENT_E2E_QWEN_VERSION:-latest}"
  export AGENT_E2E_QWEN_PREFIX="${AGENT_E2E_QWEN_PREFIX:-$e2e/.versions/latest-qwen}"
fi
if wants pi; then
  export AGENT_E2E_PI_VERSION="${AGENT_E2E_PI_VERSION:-latest}"
  export AGENT_E2E_PI_PREFIX="${AGENT_E2E_PI_PREFIX:-$e2e/.versions/latest-pi}"
fi
if wants droid; then
  export AGENT_E2E_DROID_VERSION="${AGENT_E2E_DROID_VERSION:-latest}"
  export AGENT_E2E_DROID_PREFIX="${AGENT_E2E_DROID_PREFIX:-$e2e/.versions/latest-droid}"
fi
if wants cline; then
  export AGENT_E2E_CLINE_VERSION="${AGENT_E2E_CLINE_VERSION:-latest}"
  export AGENT_E2E_CLINE_PREFIX="${AGENT_E2E_CLINE_PREFIX:-$e2e/.versions/latest-cline}"
fi
if wants kilo; then
  export AGENT_E2E_KILO_VERSION="${AGENT_E2E_KILO_VERSION:-latest}"
  export AGENT_E2E_KILO_PREFIX="${AGENT_E2E_KILO_PREFIX:-$e2e/.versions/latest-kilo}"
fi
export AGENT_TRAY_BIN="${AGENT_TRAY_BIN:-$root/target/debug/agent-tray}"
"$e2e/run.sh" "$@"
status=$?
echo "check-latest-agents: exit status $status"
exit $status
