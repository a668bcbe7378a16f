#!/usr/bin/env bash
# Installs the real agents for the end-to-end tests, once, and prints where their native
# binaries are, as shell assignments:
#   CLAUDE_BIN=/abs/path/node_modules/@anthropic-ai/claude-code-linux-x64/claude
#   CODEX_BIN=/abs/path/node_modules/@openai/codex-linux-x64/vendor/<triple>/bin/codex
#   GEMINI_JS=/abs/path/gemini/node_modules/@google/gemini-cli/bundle/gemini.js
#   COPILOT_BIN=/abs/path/more/node_modules/@github/copilot-linux-x64/copilot
#   OPENCODE_BIN=/abs/path/more/node_modules/opencode-ai/bin/opencode.exe
#   OPENCODE_CONFIG_SEED=/abs/path/opencode-config   (OpenCode's config-folder install, made here)
#   QWEN_JS=/abs/path/qwen/node_modules/@qwen-code/qwen-code/cli-entry.js
#   PI_JS=/abs/path/pi/node_modules/@mariozechner/pi-coding-agent/dist/cli.js
#   DROID_BIN=/abs/path/droid/node_modules/@factory/cli-linux-x64/bin/droid
#   CLINE_BIN=/abs/path/cline/node_modules/@cline/cli-linux-x64/bin/cline
#   KILO_BIN=/abs/path/kilo/node_modules/@kilocode/cli-linux-x64/bin/kilo
#
# Which versions (the first that is set wins):
#   install.sh [CLAUDE_VERSION [CODEX_VERSION]]          e.g. install.sh 2.1.332 0.171.0
#   AGENT_E2E_CLAUDE_VERSION / AGENT_E2E_CODEX_VERSION   (environment)
#   the pins in package.json / package-lock.json          (what CI runs)
# and likewise AGENT_E2E_GEMINI_VERSION (pin in gemini/package.json), AGENT_E2E_COPILOT_VERSION and
# AGENT_E2E_OPENCODE_VERSION (pins in more/package.json); their other versions go to folders of
# their own too ($AGENT_E2E_GEMINI_PREFIX, $AGENT_E2E_MORE_PREFIX), never into gemini/ or more/.
# A version may be any npm spec (`latest`, `2.1.x`); it is resolved with `npm view` first.
#
# Where: the pinned versions go to tests/e2e/agents/node_modules through `npm ci` (the lock
# file). Any other versions go to a prefix of their own, $AGENT_E2E_PREFIX (default
# tests/e2e/agents/.versions/claude-<v>-codex-<v>), so the pinned install is never disturbed.
# A second run finds the wanted versions already there and fetches nothing; npm itself reuses
# its cache (~/.npm/_cacache, or $npm_config_cache): cache that directory in CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

pinned() { python3 -c 'import json,sys; print(json.load(open("package.json"))["dependencies"][sys.argv[1]])' "$1"; }
have() { python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["version"])
except Exception: print("")' "$1/node_modules/$2/package.json"; }
# An exact version stays as it is; anything else (latest, a range) is asked of the registry.
resolve() {
  case "$2" in
    [0-9]*.[0-9]*.[0-9]*) case "$2" in *[!0-9.]*) ;; *) echo "$2"; return ;; esac ;;
  esac
  local v
  v="$(npm view "$1@$2" version --json 2>/dev/null | python3 -c 'import json,sys
try: v = json.load(sys.stdin)
except Exception: v = None
v = v[-1] if isinstance(v, list) and v else v
print(v if isinstance(v, str) else "")')"
  [ -n "$v" ] || { echo "install.sh: npm knows no $1@$2" >&2; exit 1; }
  echo "$v"
}

pin_claude="$(pinned @anthropic-ai/claude-code)"
pin_codex="$(pinned @openai/codex)"
want_claude="$(resolve @anthropic-ai/claude-code "${1:-${AGENT_E2E_CLAUDE_VERSION:-$pin_claude}}")"
want_codex="$(resolve @openai/codex "${2:-${AGENT_E2E_CODEX_VERSION:-$pin_codex}}")"

if [ "$want_claude" = "$pin_claude" ] && [ "$want_codex" = "$pin_codex" ] && [ -z "${AGENT_E2E_PREFIX:-}" ]; then
  prefix="$here"
  pinned_install=1
else
  prefix="${AGENT_E2E_PREFIX:-$here/.versions/claude-$want_claude-codex-$want_codex}"
  pinned_install=0
fi

find_bins() {
  CLAUDE_BIN=""; CODEX_BIN=""
  local c
  for c in "$prefix"/node_modules/@anthropic-ai/claude-code-linux-*/claude; do
    [ -x "$c" ] && CLAUDE_BIN="$c" && break
  done
  for c in "$prefix"/node_modules/@openai/codex-linux-*/vendor/*/bin/codex; do
    [ -x "$c" ] && CODEX_BIN="$c" && break
  done
}

installed_ok() {
  [ "$(have "$prefix" @anthropic-ai/claude-code)" = "$want_claude" ] || return 1
  [ "$(have "$prefix" @openai/codex)" = "$want_codex" ] || return 1
  find_bins
  [ -n "$CLAUDE_BIN" ] && [ -n "$CODEX_BIN" ] || return 1
  # The platform packages must be the same versions as the wrappers.
  [ "$("$CLAUDE_BIN" --version 2>/dev/null | awk '{print $1}')" = "$want_claude" ] || return 1
  [ "$("$CODEX_BIN" --version 2>/dev/null | awk '{print $2}')" = "$want_codex" ] || return 1
}

if installed_ok; then
  echo "install.sh: cached: claude-code $want_claude, codex $want_codex in $prefix/node_modules" >&2
elif [ "$pinned_install" = 1 ]; then
  echo "install.sh: npm ci (claude-code $want_claude, codex $want_codex)" >&2
  npm ci --no-audit --no-fund >&2
  installed_ok || { echo "install.sh: after npm ci the pinned native binaries are still missing" >&2; exit 1; }
else
  echo "install.sh: npm install claude-code $want_claude, codex $want_codex into $prefix" >&2
  mkdir -p "$prefix"
  cat > "$prefix/package.json" <<EOF
{
  "name": "agent-tray-e2e-agents-matrix",
  "private": true,
  "dependencies": {
    "@anthropic-ai/claude-code": "$want_claude",
    "@openai/codex": "$want_codex"
  }
}
EOF
  (cd "$prefix" && npm install --no-audit --no-fund >&2)
  installed_ok || { echo "install.sh: after npm install the native binaries of claude-code $want_claude / codex $want_codex are missing" >&2; exit 1; }
fi
echo "CLAUDE_BIN=$CLAUDE_BIN"
echo "CODEX_BIN=$CODEX_BIN"

# GitHub Copilot CLI and OpenCode: pinned in more/package.json with a lock of their own, so adding
# them never re-resolves the Claude/Codex pins above. Both packages pull a native binary
# (@github/copilot-linux-x64, opencode-linux-x64); OpenCode's postinstall hard-links its binary
# over bin/opencode.exe, which is what the tests run (no node wrapper between tmux and the agent).
# Other versions (AGENT_E2E_COPILOT_VERSION / AGENT_E2E_OPENCODE_VERSION, any npm spec) go to a
# folder of their own, $AGENT_E2E_MORE_PREFIX (default .versions/copilot-<v>-opencode-<v>): the
# pinned more/node_modules is never replaced by them.
pin_more() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"][sys.argv[2]])' "$here/more/package.json" "$1"; }
pin_copilot="$(pin_more @github/copilot)"
pin_opencode="$(pin_more opencode-ai)"
want_copilot="$(resolve @github/copilot "${AGENT_E2E_COPILOT_VERSION:-$pin_copilot}")"
want_opencode="$(resolve opencode-ai "${AGENT_E2E_OPENCODE_VERSION:-$pin_opencode}")"
if [ "$want_copilot" = "$pin_copilot" ] && [ "$want_opencode" = "$pin_opencode" ] && [ -z "${AGENT_E2E_MORE_PREFIX:-}" ]; then
  more="$here/more"
  more_pinned=1
else
  more="${AGENT_E2E_MORE_PREFIX:-$here/.versions/copilot-$want_copilot-opencode-$want_opencode}"
  more_pinned=0
fi
more_ok() {
  COPILOT_BIN="$more/node_modules/@github/copilot-linux-x64/copilot"
  OPENCODE_BIN="$more/node_modules/opencode-ai/bin/opencode.exe"
  [ "$(have "$more" @github/copilot)" = "$want_copilot" ] || return 1
  [ "$(have "$more" opencode-ai)" = "$want_opencode" ] || return 1
  [ -x "$COPILOT_BIN" ] && [ -x "$OPENCODE_BIN" ] || return 1
  # The postinstall step replaced the JS stub with the native binary (bigger than 1 MB).
  [ "$(stat -c %s "$OPENCODE_BIN")" -gt 1000000 ] || return 1
}
if more_ok; then
  echo "install.sh: cached: copilot $want_copilot, opencode $want_opencode in $more/node_modules" >&2
else
  if [ "$more_pinned" = 1 ]; then
    echo "install.sh: npm install --no-save in more/ (copilot $want_copilot, opencode $want_opencode)" >&2
    # Not `npm ci`: opencode-ai lists optional platform packages (darwin, windows, musl…) that the
    # registry does not serve at every version, so the lock cannot hold them and `npm ci` refuses
    # it as out of sync. `npm install --no-save` installs exactly the locked versions of what
    # exists and writes nothing.
    (cd "$more" && npm install --no-save --no-audit --no-fund >&2)
  else
    echo "install.sh: npm install copilot $want_copilot, opencode $want_opencode into $more" >&2
    mkdir -p "$more"
    printf '{\n  "name": "agent-tray-e2e-more-agents-matrix",\n  "private": true,\n  "dependencies": {\n    "@github/copilot": "%s",\n    "opencode-ai": "%s"\n  }\n}\n' \
      "$want_copilot" "$want_opencode" > "$more/package.json"
    (cd "$more" && npm install --no-audit --no-fund >&2)
  fi
  if ! more_ok && [ -f "$more/node_modules/opencode-ai/postinstall.mjs" ]; then
    # npm versions that hold back install scripts: run OpenCode's own postinstall.
    (cd "$more/node_modules/opencode-ai" && node ./postinstall.mjs >&2) || true
  fi
  more_ok || { echo "install.sh: after npm install the native copilot $want_copilot / opencode $want_opencode binaries are missing in $more" >&2; exit 1; }
fi
echo "COPILOT_BIN=$COPILOT_BIN"
echo "OPENCODE_BIN=$OPENCODE_BIN"

# OpenCode's own config folder: at its first start in a home without it, OpenCode writes a
# package.json naming @opencode-ai/plugin at its own version and runs npm install there (some 60 MB
# from the registry, ~10 s of CPU at every test's start, and a test that needs the network). The
# tests start it in a home that already holds that install, made here once: pinned by
# opencode-config/package-lock.json (the lock OpenCode 1.18.33 itself wrote) for the pinned
# OpenCode, resolved for any other version. The harness copies it into each world by hard links.
if [ "$more_pinned" = 1 ]; then
  seed="$here/opencode-config"
else
  seed="$more/opencode-config"
  mkdir -p "$seed"
  printf '{\n  "dependencies": {\n    "@opencode-ai/plugin": "%s"\n  }\n}\n' "$want_opencode" > "$seed/package.json"
fi
seed_ok() { [ "$(have "$seed" @opencode-ai/plugin)" = "$want_opencode" ]; }
if ! seed_ok; then
  echo "install.sh: npm install of @opencode-ai/plugin $want_opencode (OpenCode's config folder) in $seed" >&2
  if [ "$more_pinned" = 1 ]; then
    (cd "$seed" && npm ci --no-audit --no-fund >&2)
  else
    (cd "$seed" && npm install --no-audit --no-fund >&2)
  fi
  seed_ok || { echo "install.sh: @opencode-ai/plugin $want_opencode is missing in $seed/node_modules after npm install" >&2; exit 1; }
fi
echo "OPENCODE_CONFIG_SEED=$seed"

# Gemini CLI: a node bundle (no native binary), pinned in gemini/package.json with its own lock
# file so its pin moves independently of the others'. Another version (AGENT_E2E_GEMINI_VERSION,
# any npm spec) goes to $AGENT_E2E_GEMINI_PREFIX (default .versions/gemini-<v>), never into gemini/.
gem_pinned_dir="$here/gemini"
pin_gemini="$(cd "$gem_pinned_dir" && pinned @google/gemini-cli)"
want_gemini="$(resolve @google/gemini-cli "${AGENT_E2E_GEMINI_VERSION:-$pin_gemini}")"
if [ "$want_gemini" = "$pin_gemini" ] && [ -z "${AGENT_E2E_GEMINI_PREFIX:-}" ]; then
  gem_dir="$gem_pinned_dir"
else
  gem_dir="${AGENT_E2E_GEMINI_PREFIX:-$here/.versions/gemini-$want_gemini}"
fi
if [ "$(have "$gem_dir" @google/gemini-cli)" = "$want_gemini" ]; then
  echo "install.sh: cached: gemini-cli $want_gemini in $gem_dir/node_modules" >&2
elif [ "$gem_dir" = "$gem_pinned_dir" ]; then
  echo "install.sh: npm ci (gemini-cli $want_gemini)" >&2
  (cd "$gem_dir" && npm ci --no-audit --no-fund >&2)
else
  echo "install.sh: npm install gemini-cli $want_gemini into $gem_dir" >&2
  mkdir -p "$gem_dir"
  printf '{\n  "name": "agent-tray-e2e-gemini-matrix",\n  "private": true,\n  "dependencies": {\n    "@google/gemini-cli": "%s"\n  }\n}\n' \
    "$want_gemini" > "$gem_dir/package.json"
  (cd "$gem_dir" && npm install --no-audit --no-fund >&2)
fi
[ "$(have "$gem_dir" @google/gemini-cli)" = "$want_gemini" ] || { echo "install.sh: after npm install gemini-cli $want_gemini is still missing in $gem_dir" >&2; exit 1; }
echo "GEMINI_JS=$gem_dir/node_modules/@google/gemini-cli/bundle/gemini.js"

# Qwen Code: a node package (no native binary), pinned in qwen/package.json with its own lock.
# Installed with --ignore-scripts (its install steps are not needed to run it); it runs on Node 20
# though it asks for 22. Another version (AGENT_E2E_QWEN_VERSION) goes to $AGENT_E2E_QWEN_PREFIX
# (default .versions/qwen-<v>), never into qwen/.
qwen_pinned_dir="$here/qwen"
pin_qwen="$(cd "$qwen_pinned_dir" && pinned @qwen-code/qwen-code)"
want_qwen="$(resolve @qwen-code/qwen-code "${AGENT_E2E_QWEN_VERSION:-$pin_qwen}")"
if [ "$want_qwen" = "$pin_qwen" ] && [ -z "${AGENT_E2E_QWEN_PREFIX:-}" ]; then
  qwen_dir="$qwen_pinned_dir"
else
  qwen_dir="${AGENT_E2E_QWEN_PREFIX:-$here/.versions/qwen-$want_qwen}"
fi
if [ "$(have "$qwen_dir" @qwen-code/qwen-code)" = "$want_qwen" ]; then
  echo "install.sh: cached: qwen-code $want_qwen in $qwen_dir/node_modules" >&2
elif [ "$qwen_dir" = "$qwen_pinned_dir" ]; then
  echo "install.sh: npm install --no-save --ignore-scripts (qwen-code $want_qwen)" >&2
  # Not `npm ci`: qwen-code lists optional platform packages (clipboard helpers for darwin,
  # win32, arm64) that a lock made here cannot hold, so `npm ci` refuses it as out of sync (seen
  # on a fresh clone); `npm install --no-save` installs exactly the locked versions and writes
  # nothing.
  (cd "$qwen_dir" && npm install --no-save --ignore-scripts --no-audit --no-fund >&2)
else
  echo "install.sh: npm install qwen-code $want_qwen into $qwen_dir" >&2
  mkdir -p "$qwen_dir"
  printf '{\n  "name": "agent-tray-e2e-qwen-matrix",\n  "private": true,\n  "dependencies": {\n    "@qwen-code/qwen-code": "%s"\n  }\n}\n' \
    "$want_qwen" > "$qwen_dir/package.json"
  (cd "$qwen_dir" && npm install --ignore-scripts --no-audit --no-fund >&2)
fi
[ "$(have "$qwen_dir" @qwen-code/qwen-code)" = "$want_qwen" ] || { echo "install.sh: after npm install qwen-code $want_qwen is still missing in $qwen_dir" >&2; exit 1; }
echo "QWEN_JS=$qwen_dir/node_modules/@qwen-code/qwen-code/cli-entry.js"

# Pi: a node package (no native binary), pinned in pi/package.json with its own lock. Installed
# with --ignore-scripts (nothing in its install is needed to run it; at its first start it tries
# to download fd and ripgrep, which fails offline and harmlessly); it runs on Node 20. Another
# version (AGENT_E2E_PI_VERSION) goes to $AGENT_E2E_PI_PREFIX (default .versions/pi-<v>), never
# into pi/.
pi_pinned_dir="$here/pi"
pin_pi="$(cd "$pi_pinned_dir" && pinned @mariozechner/pi-coding-agent)"
want_pi="$(resolve @mariozechner/pi-coding-agent "${AGENT_E2E_PI_VERSION:-$pin_pi}")"
if [ "$want_pi" = "$pin_pi" ] && [ -z "${AGENT_E2E_PI_PREFIX:-}" ]; then
  pi_dir="$pi_pinned_dir"
else
  pi_dir="${AGENT_E2E_PI_PREFIX:-$here/.versions/pi-$want_pi}"
fi
if [ "$(have "$pi_dir" @mariozechner/pi-coding-agent)" = "$want_pi" ]; then
  echo "install.sh: cached: pi-coding-agent $want_pi in $pi_dir/node_modules" >&2
elif [ "$pi_dir" = "$pi_pinned_dir" ]; then
  echo "install.sh: npm install --no-save --ignore-scripts (pi-coding-agent $want_pi)" >&2
  # Not `npm ci`, for the same reason as Qwen Code: optional platform packages a lock made here
  # cannot hold; `npm install --no-save` installs exactly the locked versions and writes nothing.
  (cd "$pi_dir" && npm install --no-save --ignore-scripts --no-audit --no-fund >&2)
else
  echo "install.sh: npm install pi-coding-agent $want_pi into $pi_dir" >&2
  mkdir -p "$pi_dir"
  printf '{\n  "name": "agent-tray-e2e-pi-matrix",\n  "private": true,\n  "dependencies": {\n    "@mariozechner/pi-coding-agent": "%s"\n  }\n}\n' \
    "$want_pi" > "$pi_dir/package.json"
  (cd "$pi_dir" && npm install --ignore-scripts --no-audit --no-fund >&2)
fi
[ "$(have "$pi_dir" @mariozechner/pi-coding-agent)" = "$want_pi" ] || { echo "install.sh: after npm install pi-coding-agent $want_pi is still missing in $pi_dir" >&2; exit 1; }
echo "PI_JS=$pi_dir/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
# Factory Droid: npm `droid` (a node shim) pulls the native binary @factory/cli-<os>-<arch>, which
# the tests run directly. Pinned in droid/package.json with its own lock; `@factory/cli`, the
# same program under Factory's scope, is not used: at 0.225.1 its platform package is not in the
# registry. Installed with --ignore-scripts (the postinstall only hard-links the binary over the
# shim) and with `npm install --no-save`, not `npm ci`: the lock holds only the platform packages
# the registry serves at that version. Another version (AGENT_E2E_DROID_VERSION) goes to
# $AGENT_E2E_DROID_PREFIX (default .versions/droid-<v>), never into droid/.
droid_pinned_dir="$here/droid"
pin_droid="$(cd "$droid_pinned_dir" && pinned droid)"
want_droid="$(resolve droid "${AGENT_E2E_DROID_VERSION:-$pin_droid}")"
if [ "$want_droid" = "$pin_droid" ] && [ -z "${AGENT_E2E_DROID_PREFIX:-}" ]; then
  droid_dir="$droid_pinned_dir"
else
  droid_dir="${AGENT_E2E_DROID_PREFIX:-$here/.versions/droid-$want_droid}"
fi
droid_ok() {
  DROID_BIN=""
  local c
  for c in "$droid_dir"/node_modules/@factory/cli-linux-*/bin/droid; do
    [ -x "$c" ] && DROID_BIN="$c" && break
  done
  [ "$(have "$droid_dir" droid)" = "$want_droid" ] && [ -n "$DROID_BIN" ] || return 1
  [ "$("$DROID_BIN" --version 2>/dev/null)" = "$want_droid" ] || return 1
}
if droid_ok; then
  echo "install.sh: cached: droid $want_droid in $droid_dir/node_modules" >&2
else
  if [ "$droid_dir" = "$droid_pinned_dir" ]; then
    echo "install.sh: npm install --no-save --ignore-scripts (droid $want_droid)" >&2
    (cd "$droid_dir" && npm install --no-save --ignore-scripts --no-audit --no-fund >&2)
  else
    echo "install.sh: npm install droid $want_droid into $droid_dir" >&2
    mkdir -p "$droid_dir"
    printf '{\n  "name": "agent-tray-e2e-droid-matrix",\n  "private": true,\n  "dependencies": {\n    "droid": "%s"\n  }\n}\n' \
      "$want_droid" > "$droid_dir/package.json"
    (cd "$droid_dir" && npm install --ignore-scripts --no-audit --no-fund >&2)
  fi
  droid_ok || { echo "install.sh: after npm install the native droid $want_droid binary is missing in $droid_dir" >&2; exit 1; }
fi
echo "DROID_BIN=$DROID_BIN"
# Cline CLI: an npm launcher (Node) for a compiled Bun binary in its platform package
# (@cline/cli-linux-x64), pinned in cline/package.json with its own lock. Installed with
# --ignore-scripts (its postinstall only links the binary beside the launcher; the tests run the
# platform binary itself); it runs on Node 20 though it asks for 22. Another version
# (AGENT_E2E_CLINE_VERSION) goes to $AGENT_E2E_CLINE_PREFIX (default .versions/cline-<v>),
# never into cline/.
cline_pinned_dir="$here/cline"
pin_cline="$(cd "$cline_pinned_dir" && pinned cline)"
want_cline="$(resolve cline "${AGENT_E2E_CLINE_VERSION:-$pin_cline}")"
if [ "$want_cline" = "$pin_cline" ] && [ -z "${AGENT_E2E_CLINE_PREFIX:-}" ]; then
  cline_dir="$cline_pinned_dir"
else
  cline_dir="${AGENT_E2E_CLINE_PREFIX:-$here/.versions/cline-$want_cline}"
fi
cline_ok() {
  [ "$(have "$cline_dir" cline)" = "$want_cline" ] && [ -x "$cline_dir/node_modules/@cline/cli-linux-x64/bin/cline" ]
}
if cline_ok; then
  echo "install.sh: cached: cline $want_cline in $cline_dir/node_modules" >&2
elif [ "$cline_dir" = "$cline_pinned_dir" ]; then
  echo "install.sh: npm install --no-save --ignore-scripts (cline $want_cline)" >&2
  # Not `npm ci`: cline lists optional platform packages (darwin, windows, arm64) that a lock
  # made here does not hold for every platform; `npm install --no-save` installs exactly the
  # locked versions of what exists and writes nothing.
  (cd "$cline_dir" && npm install --no-save --ignore-scripts --no-audit --no-fund >&2)
else
  echo "install.sh: npm install cline $want_cline into $cline_dir" >&2
  mkdir -p "$cline_dir"
  printf '{\n  "name": "agent-tray-e2e-cline-matrix",\n  "private": true,\n  "dependencies": {\n    "cline": "%s"\n  }\n}\n' \
    "$want_cline" > "$cline_dir/package.json"
  (cd "$cline_dir" && npm install --ignore-scripts --no-audit --no-fund >&2)
fi
cline_ok || { echo "install.sh: after npm install the cline $want_cline binary is missing in $cline_dir" >&2; exit 1; }
echo "CLINE_BIN=$cline_dir/node_modules/@cline/cli-linux-x64/bin/cline"
# Kilo Code CLI: pinned in kilo/package.json with its own lock. The wrapper @kilocode/cli lists
# one optional platform package per os/arch; only @kilocode/cli-linux-x64 is installed here, and
# its native binary is what the tests run (no node wrapper between tmux and the agent). Pinned
# at 7.7.7: 7.8.1, the newest wrapper, names @kilocode/cli-linux-x64@7.8.1, which the registry
# does not serve. Installed with --ignore-scripts (the postinstall only links that binary).
# Another version (AGENT_E2E_KILO_VERSION) goes to $AGENT_E2E_KILO_PREFIX (default
# .versions/kilo-<v>), never into kilo/.
kilo_pinned_dir="$here/kilo"
pin_kilo="$(cd "$kilo_pinned_dir" && pinned @kilocode/cli)"
want_kilo="$(resolve @kilocode/cli "${AGENT_E2E_KILO_VERSION:-$pin_kilo}")"
if [ "$want_kilo" = "$pin_kilo" ] && [ -z "${AGENT_E2E_KILO_PREFIX:-}" ]; then
  kilo_dir="$kilo_pinned_dir"
else
  kilo_dir="${AGENT_E2E_KILO_PREFIX:-$here/.versions/kilo-$want_kilo}"
fi
KILO_BIN="$kilo_dir/node_modules/@kilocode/cli-linux-x64/bin/kilo"
kilo_ok() {
  [ "$(have "$kilo_dir" @kilocode/cli)" = "$want_kilo" ] && [ -x "$KILO_BIN" ] \
    && [ "$(have "$kilo_dir" @kilocode/cli-linux-x64)" = "$want_kilo" ]
}
if kilo_ok; then
  echo "install.sh: cached: kilo $want_kilo in $kilo_dir/node_modules" >&2
elif [ "$kilo_dir" = "$kilo_pinned_dir" ]; then
  echo "install.sh: npm install --no-save --ignore-scripts (kilo $want_kilo)" >&2
  # Not `npm ci`: the lock holds only the platform package of the machine that made it.
  (cd "$kilo_dir" && npm install --no-save --ignore-scripts --no-audit --no-fund >&2)
else
  echo "install.sh: npm install kilo $want_kilo into $kilo_dir" >&2
  mkdir -p "$kilo_dir"
  printf '{\n  "name": "agent-tray-e2e-kilo-matrix",\n  "private": true,\n  "dependencies": {\n    "@kilocode/cli": "%s"\n  }\n}\n' \
    "$want_kilo" > "$kilo_dir/package.json"
  (cd "$kilo_dir" && npm install --ignore-scripts --no-audit --no-fund >&2)
fi
kilo_ok || { echo "install.sh: after npm install the native kilo $want_kilo binary (@kilocode/cli-linux-x64) is missing in $kilo_dir" >&2; exit 1; }
echo "KILO_BIN=$KILO_BIN"
