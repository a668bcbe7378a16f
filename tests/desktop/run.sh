#!/usr/bin/env bash
# Runs every desktop and UI test of Agent Tray and exits non-zero if any fails.
#
# Prerequisites on a fresh Debian 12 machine (root or sudo), installed by the project's setup:
#   apt-get install -y --no-install-recommends \
#     build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev \
#     xvfb xauth webkit2gtk-driver chromium dbus-x11 xdotool trayer imagemagick python3 nodejs npm
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
#   6. the real app under a private Xvfb + session bus through WebKitWebDriver, with a tray host.
# Set SKIP_E2E=1 to stop after step 5.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

step() { printf '\n==> %s\n' "$*"; }

step "icons are generated from icons/generate.py"
python3 icons/generate.py
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$root" diff --exit-code --stat -- icons/ || { echo "icons/ is stale: run python3 icons/generate.py and commit"; exit 1; }
fi

step "UI: npm ci, type check, build"
if [ "${CI:-}" = "true" ] || [ ! -d ui/node_modules ]; then npm ci --prefix ui --no-audit --no-fund; fi
npm --prefix ui run check
npm --prefix ui run build

step "desktop crate: fmt, clippy, no tauri in the core"
cargo fmt -p agent-tray-desktop --check
cargo clippy -p agent-tray-desktop --all-targets --no-deps -- -D warnings
if cargo tree -p agent-tray -e normal | grep -i -E '(^|[^a-z])(tauri|wry|tao|webkit)' ; then
  echo "the core package depends on a GUI crate"; exit 1
fi

step "desktop crate: unit, bindings and mock-runtime tests"
cargo test -p agent-tray-desktop
cargo build -p agent-tray-desktop -p agent-tray

step "UI in Chromium (IPC mocked)"
if [ "${CI:-}" = "true" ] || [ ! -d tests/desktop/node_modules ]; then npm ci --prefix tests/desktop --no-audit --no-fund; fi
mkdir -p tests/desktop/artifacts
(cd tests/desktop && node --test ui.test.mjs)

if [ "${SKIP_E2E:-}" = "1" ]; then exit 0; fi

step "the real app under Xvfb + WebKitWebDriver + trayer"
# A free display number, a private X server, and a private session bus (DISPLAY set first, so
# no bus or accessibility service outlives the run).
display=""
for n in $(seq 90 140); do
  if [ ! -e "/tmp/.X11-unix/X$n" ] && [ ! -e "/tmp/.X$n-lock" ]; then display=":$n"; break; fi
done
[ -n "$display" ] || { echo "no free X display"; exit 1; }
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
trap 'kill "$xvfb_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.1; done
export DISPLAY="$display"
notify_log="$here/artifacts/notify-calls.log"
: > "$notify_log"
export NOTIFY_LOG="$notify_log"
dbus-run-session -- bash -c '
  dbus-monitor --session "type=method_call,interface=org.freedesktop.Notifications,member=Notify" > "$NOTIFY_LOG" 2>&1 &
  monitor=$!
  sleep 0.3
  cd "'"$here"'" && node --test --test-concurrency=1 e2e.test.mjs
  status=$?
  kill $monitor 2>/dev/null
  exit $status
'
