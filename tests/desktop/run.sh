#!/usr/bin/env bash
# Runs every desktop and UI test of Agent Tray and exits non-zero if any fails.
#
# Prerequisites on a fresh Debian 12 machine (root or sudo), installed by the project's setup:
#   apt-get install -y --no-install-recommends \
#     build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev \
#     xvfb xauth webkit2gtk-driver chromium dbus dunst xdotool trayer imagemagick python3 nodejs npm
#   plus a Rust toolchain (cargo). Node packages come from the committed lock files:
#     npm ci --prefix ui            (Vite, TypeScript, @tauri-apps/api, @tauri-apps/cli)
#     npm ci --prefix tests/desktop (playwright-core, selenium-webdriver)
#   This script runs both `npm ci`s itself when node_modules is missing (or always with CI=true).
#
# What it runs, in order:
#   1. the icons are current (icons/generate.py re-creates them byte for byte);
#   2. the UI type check and build (ui/dist is embedded into the app);
#   3. cargo fmt / clippy on the desktop crate; the core links no tauri;
#   4. cargo test -p agent-tray-desktop: unit tests, the stale-bindings check, the mock-runtime tests;
#   5. the UI in Chromium with the IPC mocked (screenshots in tests/desktop/artifacts/);
#   6. the real app under a private Xvfb and a private session bus through WebKitWebDriver, with
#      a tray host (trayer) and a notification server (dunst).
# Set SKIP_E2E=1 to stop after step 5, E2E_ONLY=1 to build the app and CLI and run step 6 only,
# E2E_FILTER=<regex> to run only the real-app tests whose name matches.
#
# Nothing hangs and nothing is left behind:
# - every suite runs under `timeout` (and node's per-test --test-timeout), so a wedged test fails
#   the run instead of holding it; builds get long deadlines, test runs short ones;
# - every process the run starts carries AGENT_TRAY_DESKTOP_RUN=<unique> in its environment; at
#   the end scripts/leftover-processes.sh lists (and ends) any that is still there, and the run
#   FAILS if there was one;
# - the private bus has no service folders, so it activates nothing behind the run's back (no
#   accessibility bus, no dconf): the notification server is started here, by pid, like Xvfb;
# - no background process holds this script's stdout or stderr: each writes to a log in the run's
#   temporary folder (kept, and named, when the run fails).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

export AGENT_TRAY_DESKTOP_RUN="desktop-$$-$(date +%s%N)"
run_dir="$(mktemp -d "${TMPDIR:-/tmp}/agent-tray-desktop-run.XXXXXX")"
# Caches go into the run too: Mesa (loaded by WebKit) finds its shader cache from the user's
# passwd entry, not HOME, so without this a run wrote to the real ~/.cache/mesa_shader_cache.
export XDG_CACHE_HOME="$run_dir/cache"
# Deadlines in seconds (per-test in milliseconds).
BUILD_TIMEOUT="${BUILD_TIMEOUT:-3600}"
SUITE_TIMEOUT="${SUITE_TIMEOUT:-900}"
E2E_TIMEOUT="${E2E_TIMEOUT:-600}"
TEST_TIMEOUT_MS="${TEST_TIMEOUT_MS:-120000}"

step() { printf '\n==> %s\n' "$*"; }
# `timeout` leads a process group of its own and signals all of it at the deadline; -k sends
# SIGKILL 10 s after SIGTERM to whatever ignored it.
deadline() { local secs="$1"; shift; timeout -k 10 "$secs" "$@"; }

background=() # pids this script started in the background, in start order
stop_background() {
  local pid i
  for ((i = ${#background[@]} - 1; i >= 0; i--)); do
    pid="${background[$i]}"
    if kill -TERM "$pid" 2>/dev/null; then
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  background=()
}
finish() {
  local status=$?
  trap - EXIT
  stop_background
  if ! "$root/scripts/leftover-processes.sh" --kill "AGENT_TRAY_DESKTOP_RUN=$AGENT_TRAY_DESKTOP_RUN"; then
    echo "FAILED: the run left processes behind (listed above, now ended)" >&2
    [ "$status" -ne 0 ] || status=1
  fi
  if [ "$status" -eq 0 ]; then rm -rf "$run_dir"; else echo "logs of background processes: $run_dir" >&2; fi
  exit "$status"
}
trap finish EXIT

if [ "${E2E_ONLY:-}" != "1" ]; then
step "icons are generated from icons/generate.py"
python3 icons/generate.py
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$root" diff --exit-code --stat -- icons/ || { echo "icons/ is stale: run python3 icons/generate.py and commit"; exit 1; }
fi

step "UI: npm ci, type check, build"
if [ "${CI:-}" = "true" ] || [ ! -d ui/node_modules ]; then deadline "$BUILD_TIMEOUT" npm ci --prefix ui --no-audit --no-fund </dev/null; fi
deadline "$SUITE_TIMEOUT" npm --prefix ui run check </dev/null
deadline "$SUITE_TIMEOUT" npm --prefix ui run build </dev/null

step "desktop crate: fmt, clippy, no tauri in the core"
cargo fmt -p agent-tray-desktop --check
deadline "$BUILD_TIMEOUT" cargo clippy -p agent-tray-desktop --all-targets --no-deps -- -D warnings </dev/null
if cargo tree -p agent-tray -e normal | grep -i -E '(^|[^a-z])(tauri|wry|tao|webkit)' ; then
  echo "the core package depends on a GUI crate"; exit 1
fi

step "desktop crate: unit, bindings and mock-runtime tests"
deadline "$BUILD_TIMEOUT" cargo test -p agent-tray-desktop --no-run </dev/null
deadline "$SUITE_TIMEOUT" cargo test -p agent-tray-desktop </dev/null
deadline "$BUILD_TIMEOUT" cargo build -p agent-tray-desktop -p agent-tray </dev/null

step "UI in Chromium (IPC mocked)"
if [ "${CI:-}" = "true" ] || [ ! -d tests/desktop/node_modules ]; then deadline "$BUILD_TIMEOUT" npm ci --prefix tests/desktop --no-audit --no-fund </dev/null; fi
mkdir -p tests/desktop/artifacts
(cd tests/desktop && deadline "$SUITE_TIMEOUT" node --test --test-timeout="$TEST_TIMEOUT_MS" ui.test.mjs </dev/null)

if [ "${SKIP_E2E:-}" = "1" ]; then exit 0; fi
else
  step "E2E_ONLY: build the app and the CLI"
  deadline "$BUILD_TIMEOUT" cargo build -p agent-tray-desktop -p agent-tray </dev/null
fi

step "the real app under Xvfb + WebKitWebDriver + trayer + dunst"
# A free display number and a private X server.
display=""
for n in $(seq 90 140); do
  if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then display=":$n"; break; fi
done
[ -n "$display" ] || { echo "no free X display"; exit 1; }
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp </dev/null >"$run_dir/xvfb.log" 2>&1 &
background+=("$!")
for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.1; done
[ -e "/tmp/.X11-unix/X${display#:}" ] || { echo "Xvfb did not start (see $run_dir/xvfb.log)"; exit 1; }
export DISPLAY="$display"

# A private session bus that activates nothing: whatever is on it was started below, by pid.
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
[ -n "$DBUS_SESSION_BUS_ADDRESS" ] || { echo "the private bus did not start (see $run_dir/bus.log)"; exit 1; }
export DBUS_SESSION_BUS_ADDRESS
# GTK and WebKit would ask the bus for an accessibility bus and dconf; say there are none.
export NO_AT_BRIDGE=1 GTK_A11Y=none GSETTINGS_BACKEND=memory

name_owned() {
  dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
    org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q 'boolean true'
}
# The system's configuration, with the context menu's "dmenu" replaced by a picker the tests
# steer (tests/desktop/dunst-pick.sh), so a test can choose an alert's Allow as a person would.
export DUNST_PICK_FILE="$run_dir/dunst-pick" DUNST_MENU_LOG="$run_dir/dunst-menu.log"
: >"$DUNST_PICK_FILE"
sed "s|^\([[:space:]]*dmenu[[:space:]]*=\).*|\1 $here/dunst-pick.sh|" /etc/xdg/dunst/dunstrc >"$run_dir/dunstrc"
grep -q "dunst-pick.sh" "$run_dir/dunstrc" || { echo "could not set dunst's dmenu in $run_dir/dunstrc"; exit 1; }
dunst -config "$run_dir/dunstrc" </dev/null >"$run_dir/dunst.log" 2>&1 &
background+=("$!")
for _ in $(seq 100); do name_owned org.freedesktop.Notifications && break; sleep 0.1; done
name_owned org.freedesktop.Notifications || { echo "dunst did not start (see $run_dir/dunst.log)"; exit 1; }

mkdir -p "$here/artifacts"
notify_log="$here/artifacts/notify-calls.log"
: >"$notify_log"
export NOTIFY_LOG="$notify_log"
dbus-monitor --session "type=method_call,interface=org.freedesktop.Notifications,member=Notify" \
  </dev/null >"$NOTIFY_LOG" 2>&1 &
background+=("$!")
sleep 0.3

e2e_status=0
(cd "$here" && deadline "$E2E_TIMEOUT" node --test --test-concurrency=1 --test-timeout="$TEST_TIMEOUT_MS" \
  ${E2E_FILTER:+--test-name-pattern="$E2E_FILTER"} e2e.test.mjs </dev/null) || e2e_status=$?
exit "$e2e_status"
