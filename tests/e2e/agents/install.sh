#!/usr/bin/env bash
# Installs the pinned real agents (see package.json / package-lock.json) into
# tests/e2e/agents/node_modules, once. A second run finds the pinned versions
# already there and fetches nothing. `npm ci` itself reuses npm's own cache
# (~/.npm/_cacache, or $npm_config_cache): cache that directory in CI.
#
# Prints where the native binaries are, as shell assignments:
#   CLAUDE_BIN=/abs/path/node_modules/@anthropic-ai/claude-code-linux-x64/claude
#   CODEX_BIN=/abs/path/node_modules/@openai/codex-linux-x64/vendor/<triple>/bin/codex
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

want() { python3 -c 'import json,sys; print(json.load(open("package.json"))["dependencies"][sys.argv[1]])' "$1"; }
have() { python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["version"])
except Exception: print("")' "node_modules/$1/package.json"; }

want_claude="$(want @anthropic-ai/claude-code)"
want_codex="$(want @openai/codex)"

find_bins() {
  CLAUDE_BIN=""; CODEX_BIN=""
  local c
  for c in node_modules/@anthropic-ai/claude-code-linux-*/claude; do
    [ -x "$c" ] && CLAUDE_BIN="$here/$c" && break
  done
  for c in node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
    [ -x "$c" ] && CODEX_BIN="$here/$c" && break
  done
}

installed_ok() {
  [ "$(have @anthropic-ai/claude-code)" = "$want_claude" ] || return 1
  [ "$(have @openai/codex)" = "$want_codex" ] || return 1
  find_bins
  [ -n "$CLAUDE_BIN" ] && [ -n "$CODEX_BIN" ] || return 1
  # The platform packages must be the same versions as the wrappers.
  [ "$("$CLAUDE_BIN" --version 2>/dev/null | awk '{print $1}')" = "$want_claude" ] || return 1
  [ "$("$CODEX_BIN" --version 2>/dev/null | awk '{print $2}')" = "$want_codex" ] || return 1
}

if installed_ok; then
  echo "install.sh: cached: claude-code $want_claude, codex $want_codex already in node_modules" >&2
else
  echo "install.sh: npm ci (claude-code $want_claude, codex $want_codex)" >&2
  npm ci --no-audit --no-fund >&2
  installed_ok || { echo "install.sh: after npm ci the pinned native binaries are still missing" >&2; exit 1; }
fi
echo "CLAUDE_BIN=$CLAUDE_BIN"
echo "CODEX_BIN=$CODEX_BIN"
