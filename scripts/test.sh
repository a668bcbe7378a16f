#!/usr/bin/env bash
# Installs what is missing and runs every test of Agent Tray: formatting and lints, the core's
# unit and integration tests, the desktop crate and UI tests (mock runtime, Chromium, the real
# app under Xvfb through WebKitWebDriver), a type-check and lint of the macOS code for both Mac
# targets (scripts/check-macos.sh), the Windows build linted and the core's tests run under Wine
# (scripts/check-windows.sh), and the end-to-end tests with the real claude and
# codex CLIs. Every step runs even when an earlier one fails; the exit status says if any did.
# The macOS check (compiling) runs in a lane beside the core's tests (mostly waiting), the
# Windows check in one beside the real agents (mostly waiting), and the summary gives each
# step's seconds and the run's total.
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
step_no=0
# Sets `log` to the next step's log file (not a command substitution: that would lose the count).
next_log() { step_no=$((step_no + 1)); log="$(printf '%s/%02d.log' "$logs" "$step_no")"; }
tally() { # name, status, seconds, log
  if [ "$2" -eq 0 ]; then
    passed+=("$1 ($3s)")
  else
    failed+=("$1 ($3s)")
    failed_logs+=("$4")
  fi
}
step() {
  local name="$1"; shift
  printf '\n==== %s\n' "$name"
  local start=$SECONDS status log
  next_log
  timeout -k 10 "$step_timeout" "$@" </dev/null >"$log" 2>&1 &
  local pid=$!
  # Not one of the run's processes: the last step looks for those, and its own tail is there.
  env -u AGENT_TRAY_TEST_RUN tail -n +1 -s 0.2 --pid="$pid" -f "$log" &
  local tail_pid=$!
  wait "$pid"
  status=$?
  wait "$tail_pid"
  tally "$name" "$status" "$((SECONDS - start))" "$log"
}
# A lane of steps run one after another in the background, beside the foreground steps: for
# CPU-bound steps (compiling) that can overlap steps that mostly wait (the core's tests sleep
# and time out for most of their run; the real agents, driven in tmux, wait on the agents'
# screens). A lane runs at a lower priority so the foreground's deadlines are not eaten by the
# compiler, and must not share a cargo target folder with the foreground (cargo holds a folder's
# lock for a whole build). Its steps' logs are printed whole when the lanes are collected (two
# live tails would interleave). Several lanes may run at once.
lane_pids=()
lane_dirs=()
lane() { # "name" cmd... [--then "name" cmd...]
  local dir="$logs/lane-${#lane_pids[@]}"
  mkdir -p "$dir"
  (
    i=0
    while [ "$#" -gt 0 ]; do
      name="$1"; shift
      cmd=()
      while [ "$#" -gt 0 ] && [ "$1" != "--then" ]; do cmd+=("$1"); shift; done
      [ "$#" -gt 0 ] && shift
      i=$((i + 1))
      start=$(date +%s)
      nice -n 10 timeout -k 10 "$step_timeout" "${cmd[@]}" </dev/null >"$dir/$i.log" 2>&1
      status=$?
      printf '%s\t%s\t%s\n' "$status" "$(( $(date +%s) - start ))" "$name" >>"$dir/results"
    done
  ) &
  lane_pids+=("$!")
  lane_dirs+=("$dir")
}
collect_lanes() {
  local k i status secs name log
  for k in "${!lane_pids[@]}"; do
    wait "${lane_pids[$k]}"
    i=0
    while IFS=$'\t' read -r status secs name; do
      i=$((i + 1))
      next_log
      mv "${lane_dirs[$k]}/$i.log" "$log"
      printf '\n==== %s (ran beside the steps above)\n' "$name"
      cat "$log"
      tally "$name" "$status" "$secs" "$log"
    done <"${lane_dirs[$k]}/results"
  done
  lane_pids=()
  lane_dirs=()
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
step "domain and core: build the tests" cargo test -p agent-tray-domain -p agent-tray --no-run
step "desktop and UI (tests/desktop/run.sh)" tests/desktop/run.sh
# The macOS check compiles only (CPU), in a target folder of its own (target/macos): it runs
# beside the core's tests, which leave more than a core idle on 2 cores, and then beside the
# real agents, at a lower priority. Not beside the desktop step: that one rebuilds ui/dist, which
# the desktop crate embeds.
lane "macOS: clippy -D warnings for aarch64 and x86_64 (scripts/check-macos.sh)" \
  env CHECK_MACOS_TARGET_DIR="$root/target/macos" scripts/check-macos.sh
step "domain and core: unit and integration tests" cargo test -p agent-tray-domain -p agent-tray
# The same build as the desktop step's last (nothing to do when it ran): the real-agent suite's
# window test (test_window) runs target/debug/agent-tray-desktop.
step "build agent-tray and the app for the end-to-end tests" cargo build -p agent-tray -p agent-tray-desktop
# The Windows check compiles (CPU) and runs the core's tests under Wine; the real agents mostly
# wait: run them side by side. Windows has its own target folder (target/windows).
lane "Windows: clippy -D warnings, and the core's tests under Wine (scripts/check-windows.sh)" scripts/check-windows.sh
step "real agents, and all five in the real window (tests/e2e/agents/run.sh)" env AGENT_TRAY_BIN="$root/target/debug/agent-tray" tests/e2e/agents/run.sh
collect_lanes
step "no process left behind" scripts/leftover-processes.sh --kill "AGENT_TRAY_TEST_RUN=$AGENT_TRAY_TEST_RUN"

printf '\n==== summary (%s s in all)\n' "$SECONDS"
for s in "${passed[@]}"; do echo "ok      $s"; done
for s in "${failed[@]+"${failed[@]}"}"; do echo "FAILED  $s"; done
echo "steps: ${#passed[@]} passed, ${#failed[@]} failed"
for i in "${!failed_logs[@]}"; do
  printf '\n---- what failed in: %s (log: %s)\n' "${failed[$i]}" "${failed_logs[$i]}"
  lines="$(what_failed "${failed_logs[$i]}")"
  if [ -n "$lines" ]; then echo "$lines"; else tail -n 10 "${failed_logs[$i]}" | cut -c1-240; fi
done
[ "${#failed[@]}" -eq 0 ]
