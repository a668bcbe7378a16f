#!/usr/bin/env bash
# Installs what is missing and runs every test of Agent Tray: formatting and lints, the core's
# unit and integration tests, the desktop crate and UI tests (mock runtime, Chromium, the real
# app under Xvfb through WebKitWebDriver), a type-check and lint of the macOS code for both Mac
# targets (scripts/check-macos.sh), and the end-to-end tests with the real claude and
# codex CLIs. Every step runs even when an earlier one fails; the exit status says if any did.
# Last, it lists every process the run started that is still running and FAILS if there is one
# (each process inherits AGENT_TRAY_TEST_RUN; see scripts/leftover-processes.sh).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export AGENT_TRAY_TEST_RUN="test-$$-$(date +%s%N)"

failed=()
passed=()
# Every step has a deadline: a hang fails that step (SIGTERM, then SIGKILL 10 s later) instead of
# the whole run; stdin is never the runner's.
step_timeout="${STEP_TIMEOUT:-2400}"
step() {
  local name="$1"; shift
  printf '\n==== %s\n' "$name"
  local start=$SECONDS
  if timeout -k 10 "$step_timeout" "$@" </dev/null; then
    passed+=("$name ($((SECONDS - start))s)")
  else
    failed+=("$name ($((SECONDS - start))s)")
  fi
}

scripts/setup.sh --test || { echo "setup failed: see above"; exit 1; }

step "cargo fmt --check" cargo fmt --all -- --check
step "the repository stands alone (no paths outside it)" scripts/check-standalone.sh
step "core: clippy -D warnings" cargo clippy -p agent-tray --all-targets -- -D warnings
step "core: no tauri/wry/tao/webkit" bash -c '! cargo tree -p agent-tray -e normal --prefix none | grep -E "^(tauri|wry|tao|webkit2gtk)[ -]"'
step "core: unit and integration tests" cargo test -p agent-tray
step "desktop and UI (tests/desktop/run.sh)" tests/desktop/run.sh
# After the desktop step: the host's build scripts and proc-macros it built are reused.
step "macOS: clippy -D warnings for aarch64 and x86_64 (scripts/check-macos.sh)" scripts/check-macos.sh
# The same build as the desktop step's last (nothing to do when it ran): the real-agent suite's
# window test (test_window) runs target/debug/agent-tray-desktop.
step "build agent-tray and the app for the end-to-end tests" cargo build -p agent-tray -p agent-tray-desktop
step "real agents, and all five in the real window (tests/e2e/agents/run.sh)" env AGENT_TRAY_BIN="$root/target/debug/agent-tray" tests/e2e/agents/run.sh
step "no process left behind" scripts/leftover-processes.sh --kill "AGENT_TRAY_TEST_RUN=$AGENT_TRAY_TEST_RUN"

printf '\n==== summary\n'
for s in "${passed[@]}"; do echo "ok      $s"; done
for s in "${failed[@]+"${failed[@]}"}"; do echo "FAILED  $s"; done
echo "steps: ${#passed[@]} passed, ${#failed[@]} failed"
[ "${#failed[@]}" -eq 0 ]
