#!/usr/bin/env bash
# What the tray app costs at rest and how fast it answers (issue "the tray at rest costs
# nothing"): the release app under a private Xvfb, a private session bus and a tray host
# (trayer), 50 sessions fed through `observe` with 50 real live processes. Every figure is summed
# over the app's whole process tree (the app and its WebKit processes): PSS from
# /proc/PID/smaps_rollup, CPU from utime+stime in /proc/PID/stat. Legs 1 and 4 also give the
# memory only the app holds (Pss_Anon, and USS = Private_Clean + Private_Dirty): PSS charges it a
# share of every shared library page, which grows as other programs mapping them exit.
#
#   1. --background (the window never opened): PSS, CPU over BG_SECS (default 300), and PSS at
#      minute 1 and at FLAT_SECS (default 600) for flatness; STOP_AFTER=1 stops there;
#   2. window open and visible: CPU over VISIBLE_SECS (default 60), twice: just fed (all 50 rows
#      show seconds, as a row does for its state's first hour: the clock's worst case), then in
#      the steady state (the page's rows aged by two hours where its clock reads them, so they
#      show minutes); with the UI's own counters (clock wake-ups, times rewritten, rows built);
#   3. open-to-painted over 20 opens each way: a second launch, and a session's item of the tray
#      menu clicked through its dbusmenu on the private bus (in process), to the window's first
#      frame holding the sessions (the UI stamps it, see ui/src/paint.ts), and the part of it up
#      to the page's navigation start (performance.timeOrigin); the same session item clicked
#      with the menu opened first as a StatusNotifierItem host opens it (AboutToShow, "opened":
#      the app starts its pages then), the click at once and 400 ms later; then the menu's "Open
#      Agent Tray", to the popover's first frame holding them; STOP_AFTER=3 stops there;
#   4. window opened then closed: PSS and CPU over CLOSED_SECS (default 60), from 10 s after
#      closing under WebDriver (which keeps WebKit's network process), and again
#      ("4b", after leg 6) with the app started without automation, opened by a second launch
#      and closed with Esc (xdotool), as users run it;
#   5. hook-to-row-in-the-DOM over 200 `observe` calls (a MutationObserver in the page stamps
#      each new row);
#   6. kill -9 of a watched process to `ended` in `list --json`, over 20 kills;
# then the pid-watcher tick (cargo bench --bench core) and the hook vs `true` ratio
# (benches/hook_overhead.sh), unless SKIP_CORE=1.
#
# Usage: benches/at_rest.sh   (builds the release app and CLI first; SKIP_BUILD=1 to skip;
#        PROFILE=debug measures the debug build instead, for a quick check of the script only)
#        LEGS=closed runs only leg 4c (the app without automation, the window opened and closed
#        CLOSE_CYCLES times, PSS CLOSED_AFTER s after each close, by mapping); with
#        AGENT_TRAY_WINDOW_IN_PROCESS=1 the window stays in the app's process (no window host); LEGS=latency runs only leg 5; LEGS=window OPEN_ONLY=1 only leg 3's `agent-tray open` runs; APP/CLI measure other binaries, e.g. a baseline build;
#        MARKS=1 prints every performance mark of leg 3's pages (p50), RUNS_JSON=file (with
#        OPEN_ONLY=1) writes each open with its wall-clock time, to line up with `perf record -k`;
#        KEEP_RUN_DIR=1 keeps the run's folder and world (the app's and the window host's logs);
#        CPU_BREAKDOWN=1 adds CPU per process, THREAD_BREAKDOWN=1 run time and wake-ups per
#        thread name from /proc/PID/task/*/schedstat)
# Needs what tests/desktop/run.sh needs (Xvfb, dbus-daemon, trayer, WebKitWebDriver, node with
# tests/desktop/node_modules). Everything runs in a temp world; every process is ended by pid.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

profile="${PROFILE:-release}"
if [ "${SKIP_BUILD:-}" != "1" ]; then
  npm --prefix ui run build </dev/null >/dev/null
  if [ "$profile" = release ]; then
    cargo build --release -p agent-tray-desktop -p agent-tray </dev/null
  else
    cargo build -p agent-tray-desktop -p agent-tray </dev/null
  fi
fi
[ -d tests/desktop/node_modules ] || npm ci --prefix tests/desktop --no-audit --no-fund </dev/null

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/agent-tray-at-rest.XXXXXX")"
background=()
finish() {
  local status=$? pid i
  for ((i = ${#background[@]} - 1; i >= 0; i--)); do
    pid="${background[$i]}"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -eq 0 ] && [ -z "${KEEP_RUN_DIR:-}" ]; then rm -rf "$run_dir"; else echo "logs: $run_dir" >&2; fi
  exit "$status"
}
trap finish EXIT

display=""
for n in $(seq 150 199); do
  if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then display=":$n"; break; fi
done
[ -n "$display" ] || { echo "no free X display"; exit 1; }
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp </dev/null >"$run_dir/xvfb.log" 2>&1 &
background+=("$!")
for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.1; done
export DISPLAY="$display"

cat >"$run_dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=$run_dir</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$run_dir/bus.conf" --nofork --nopidfile --print-address=3 \
  3>"$run_dir/bus.address" </dev/null >"$run_dir/bus.log" 2>&1 &
background+=("$!")
for _ in $(seq 100); do [ -s "$run_dir/bus.address" ] && break; sleep 0.1; done
DBUS_SESSION_BUS_ADDRESS="$(head -n1 "$run_dir/bus.address")"
export DBUS_SESSION_BUS_ADDRESS NO_AT_BRIDGE=1 GTK_A11Y=none GSETTINGS_BACKEND=memory
# Mesa (loaded by WebKit) finds its shader cache from the passwd entry, not HOME: keep it here.
export XDG_CACHE_HOME="$run_dir/cache"

echo "# agent-tray at rest, $profile build ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
APP="${APP:-$here/target/$profile/agent-tray-desktop}" CLI="${CLI:-$here/target/$profile/agent-tray}" \
  RUN_DIR="$run_dir" timeout -k 10 3600 node benches/at_rest.mjs </dev/null

if [ "${SKIP_CORE:-}" != "1" ]; then
  echo; echo "## pid-watcher tick and registry (cargo bench --bench core -- --quick)"
  cargo bench --bench core -- --quick </dev/null 2>/dev/null | sed -n '/pid watcher/,/^$/p'
  echo "## hook vs true (benches/hook_overhead.sh)"
  RUNS="${RUNS:-300}" benches/hook_overhead.sh "$here/target/$profile/agent-tray" </dev/null
fi
