#!/usr/bin/env bash
# Installs what is missing, builds, and starts the Agent Tray desktop app.
# Extra arguments are passed to the app.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
npm --prefix ui run build --silent
cargo build --release -p agent-tray -p agent-tray-desktop
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "$(uname)" != Darwin ]; then
  echo "run.sh: no display (DISPLAY and WAYLAND_DISPLAY are unset): the tray app needs a desktop." >&2
  echo "        On a headless machine run the engine alone: target/release/agent-tray daemon" >&2
  exit 1
fi
echo "Agent Tray is starting. Hooks for instant updates: target/release/agent-tray install"
exec target/release/agent-tray-desktop "$@"
