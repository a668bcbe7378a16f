#!/usr/bin/env bash
# Installs what Agent Tray needs on a Debian or Ubuntu machine, skipping whatever is already there.
#
#   scripts/setup.sh          what building and running the app needs
#   scripts/setup.sh --test   and what every test needs (Xvfb, WebKitWebDriver, Chromium, tmux, kitty,
#                             a notification server, a tray host, the real claude and codex CLIs,
#                             OpenSSH's sshd, which the remote tests start themselves on
#                             127.0.0.1: the system's ssh service is not needed)
#
# Needs root or sudo for apt-get. Rust (cargo) must already be installed: see https://rustup.rs.
# Node packages come from the committed lock files (npm ci), the agents' CLIs from the npm
# registry at pinned versions, installed once and reused.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

build_packages=(build-essential pkg-config libwebkit2gtk-4.1-dev libayatana-appindicator3-dev
  librsvg2-dev libdbus-1-dev python3 git ca-certificates)
test_packages=(xvfb xauth webkit2gtk-driver chromium dbus dbus-x11 dunst xdotool trayer imagemagick
  tmux kitty procps util-linux psmisc hyperfine openssh-client openssh-server zsh fish libglib2.0-bin
  mingw-w64 wine wine64 nsis)

packages=("${build_packages[@]}")
[ "$want_tests" = 1 ] && packages+=("${test_packages[@]}")
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install these packages by hand: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "run as root or install sudo: missing packages ${missing[*]}"
    sudo="sudo"
  fi
  say "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "system packages: all present"
fi

command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust with rustup (https://rustup.rs), then run this again"
for component in clippy rustfmt; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 || die "cargo $component is missing: install it with rustup component add $component"
    rustup component add "$component"
  fi
done

# npm ci only when the lock file changed since the last install (a stamp beside node_modules).
npm_ci() {
  local dir="$1"
  local stamp="$dir/node_modules/.lock-sha"
  local sum
  sum="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    say "npm packages in ${dir#"$root"/}: current"
    return
  fi
  say "npm ci in ${dir#"$root"/}"
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  echo "$sum" > "$stamp"
}

# The macOS standard libraries, so scripts/check-macos.sh can type-check the macOS code here, and
# Windows' (with mingw-w64 and Wine above), so scripts/check-windows.sh can build and run it.
if [ "$want_tests" = 1 ]; then
  cross_targets=(aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu)
  if ! command -v rustup >/dev/null 2>&1; then
    say "warning: rustup not found: cannot add ${cross_targets[*]}; scripts/check-macos.sh will say macOS was not checked"
  else
    want_targets=()
    for t in "${cross_targets[@]}"; do
      rustup target list --installed | grep -qx "$t" || want_targets+=("$t")
    done
    if [ "${#want_targets[@]}" -gt 0 ]; then
      say "rustup target add ${want_targets[*]}"
      rustup target add "${want_targets[@]}" ||
        say "warning: rustup could not download ${want_targets[*]} (offline?); scripts/check-macos.sh and scripts/check-windows.sh will say what was not checked"
    fi
  fi
fi

npm_ci "$root/ui"
if [ "$want_tests" = 1 ]; then
  npm_ci "$root/tests/desktop"
  "$root/tests/e2e/agents/install.sh" >/dev/null
  say "claude and codex CLIs: installed (tests/e2e/agents/node_modules)"
fi
say "done"
