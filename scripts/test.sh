#!/usr/bin/env bash
# Installs what is missing and runs every test of Agent Tray: formatting and lints, the core's
# unit and integration tests, the desktop crate and UI tests (mock runtime, Chromium, the real
# app under Xvfb through WebKitWebDriver), a type-check and lint of the macOS code for both Mac
# targets (scripts/check-macos.sh), the Windows build linted and the core's tests run under Wine
# (scripts/check-windows.sh), and the end-to-end tests with the real claude and
# codex CLIs. Every step runs even when an earlier one fails; the exit status says if any did.
# Last, it lists every process the run started that is still running and FAILS if there is one
# (each process inherits AGENT_TRAY_TEST_RUN; see scripts/leftover-processes.sh).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export AGENT_TRAY_TEST_RUN="test-$$-$(date +%s%N)"

failed=()
failed_logs=()
passed=()
# Each step's output goes to a log of its own (shown live by `tail --pid`, which ends with the
# step, so no leftover process can hold the runner's pipe): the summary ends with what the failed
# steps' logs say failed, since a CI runner often keeps only the end of the output.
logs="${TEST_LOGS:-$root/target/test-logs/$AGENT_TRAY_TEST_RUN}"
mkdir -p "$logs"
# Every step has a deadline: a hang fails that step (SIGTERM, then SIGKILL 10 s later) instead of
# the whole run; stdin is never the runner's.
step_timeout="${STEP_TIMEOUT:-2400}"
step() {
  local name="$1"; shift
  printf '\n==== %s\n' "$name"
  local start=$SECONDS status log
  log="$logs/$(printf '%02d' $((${#passed[@]} + ${#failed[@]} + 1))).log"
  timeout -k 10 "$step_timeout" "$@" </dev/null >"$log" 2>&1 &
  local pid=$!
  # Not one of the run's processes: the last step looks for those, and its own tail is there.
  env -u AGENT_TRAY_TEST_RUN tail -n +1 -s 0.2 --pid="$pid" -f "$log" &
  local tail_pid=$!
  wait "$pid"
  status=$?
  wait "$tail_pid"
  if [ "$status" -eq 0 ]; then
    passed+=("$name ($((SECONDS - start))s)")
  else
    failed+=("$name ($((SECONDS - start))s)")
    failed_logs+=("$log")
  fi
}
# The lines of a failed step's log that say what failed (test names, panics and their message,
# assertion and error lines), each once, at most 16.
what_failed() {
  awk '
    function emit(l) { if (!(l in seen) && n < 16) { seen[l] = 1; n++; print substr(l, 1, 240) } }
    then_next { then_next = 0; emit($0); next }
    /panicked at|^ +error: [|]-$/ { emit($0); then_next = 1; next }
    /^test .* FAILED$|^(FAIL|ERROR): |^  (FAIL|ERROR) |^ *not ok |^ *✖ |^FAILED|^error(\[|:)|^ +error: |timed out|^[A-Za-z]*Error: / { emit($0) }
  ' "$1"
}

scripts/setup.sh --test || { echo "setup failed: see above"; exit 1; }

step "cargo fmt --check" cargo fmt --all -- --check
step "the repository stands alone (no paths outside it)" scripts/check-standalone.sh
step "every relative link in the docs resolves" python3 scripts/check-doc-links.py
step "core and domain: clippy -D warnings" cargo clippy -p agent-tray-domain -p agent-tray --all-targets -- -D warnings
step "core: no tauri/wry/tao/webkit" bash -c '! cargo tree -p agent-tray -e normal --prefix none | grep -E "^(tauri|wry|tao|webkit2gtk)[ -]"'
# The domain crate depends on nothing of the project (so no import can run back up to it).
step "domain: depends on nothing of the project" bash -c '! cargo tree -p agent-tray-domain -e normal --prefix none | grep -E "^(agent-tray|tauri|wry|tao|webkit2gtk)[ -]" | grep -v "^agent-tray-domain "'
step "domain and core: unit and integration tests" cargo test -p agent-tray-domain -p agent-tray
step "desktop and UI (tests/desktop/run.sh)" tests/desktop/run.sh
# After the desktop step: the host's build scripts and proc-macros it built are reused.
step "macOS: clippy -D warnings for aarch64 and x86_64 (scripts/check-macos.sh)" scripts/check-macos.sh
# Its own target folder (target/windows): the Linux build above is not evicted.
step "Windows: clippy -D warnings, and the core's tests under Wine (scripts/check-windows.sh)" scripts/check-windows.sh
# The same build as the desktop step's last (nothing to do when it ran): the real-agent suite's
# window test (test_window) runs target/debug/agent-tray-desktop.
step "build agent-tray and the app for the end-to-end tests" cargo build -p agent-tray -p agent-tray-desktop
step "real agents, and all five in the real window (tests/e2e/agents/run.sh)" env AGENT_TRAY_BIN="$root/target/debug/agent-tray" tests/e2e/agents/run.sh
step "no process left behind" scripts/leftover-processes.sh --kill "AGENT_TRAY_TEST_RUN=$AGENT_TRAY_TEST_RUN"

printf '\n==== summary\n'
for s in "${passed[@]}"; do echo "ok      $s"; done
for s in "${failed[@]+"${failed[@]}"}"; do echo "FAILED  $s"; done
echo "steps: ${#passed[@]} passed, ${#failed[@]} failed"
for i in "${!failed_logs[@]}"; do
  printf '\n---- what failed in: %s (log: %s)\n' "${failed[$i]}" "${failed_logs[$i]}"
  lines="$(what_failed "${failed_logs[$i]}")"
  if [ -n "$lines" ]; then echo "$lines"; else tail -n 10 "${failed_logs[$i]}" | cut -c1-240; fi
done
[ "${#failed[@]}" -eq 0 ]
