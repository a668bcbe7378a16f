#!/usr/bin/env bash
# Builds the Debian package of the desktop app, with the `agent-tray` CLI beside it, and the RPM
# package of the same files:
#
#   bash scripts/package-deb.sh
#
# prints the path of the .deb (target/release/bundle/deb/Agent Tray_<version>_amd64.deb) and of
# the .rpm (target/release/bundle/rpm/Agent Tray-<version>-1.x86_64.rpm). The .deb
# installs /usr/bin/agent-tray-desktop (the app), /usr/bin/agent-tray (the CLI the app's "Install
# hooks…" runs and the hooks call), the menu entry (which runs `agent-tray open`: it opens the
# running app's window, or starts the app) and the icons; it depends on WebKitGTK 4.1 and
# libayatana-appindicator3-1. A release build: about 6 minutes on 2 cores from a cold cache.
#
# Needs what tests/desktop/run.sh needs to build (Rust, the -dev packages, Node) and works offline.
# Only `--bundles deb,rpm`: AppImage downloads tools at build time, so it is never built here.
# The .rpm needs no rpmbuild (the bundler writes it itself, offline); it depends on
# libayatana-appindicator-gtk3 (Fedora's name) and, through the bundler, WebKitGTK 4.1. When
# rpm2cpio and cpio are installed (Debian packages of those names) its contents are checked too.
#
# Why not a bare `tauri build`: the tauri CLI takes the folder of tauri.conf.json (the workspace
# root) as the app crate's folder, and the root package is the core, whose main binary is the
# CLI. `tauri build` then renames target/release/agent-tray to the app's name and packs the CLI
# as the app (seen here: a 5 MB "agent-tray-desktop" that printed `agent-tray 0.1.0`). So cargo
# builds both binaries itself (the app with `tauri/custom-protocol`, as `tauri build` would), and
# `tauri bundle` only packs what is there: the app as /usr/bin/agent-tray-desktop, the CLI through
# `bundle.linux.deb.files` (its absolute path given here, so a custom CARGO_TARGET_DIR works).
# The UI is built here too (the CLI would run a beforeBuildCommand from whatever folder it guesses
# holds the frontend). The script checks the result: the packed app must not be the CLI.
#
# macOS: `bundle.macOS.files` in tauri.conf.json puts the CLI at Contents/MacOS/agent-tray,
# beside the app's binary, where the app looks for it; the .app cannot be built on this machine
# (the same cargo-then-`tauri bundle --bundles app` order would apply there).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

echo "==> UI"
[ -d ui/node_modules ] || npm ci --prefix ui --no-audit --no-fund
npm --prefix ui run build

echo "==> the app and the agent-tray CLI (release)"
cargo build --release -p agent-tray-desktop --bin agent-tray-desktop --features tauri/custom-protocol
cargo build --release -p agent-tray --bin agent-tray

echo "==> the .deb and the .rpm (tauri CLI from ui/node_modules, packing only)"
rm -f "$target"/release/bundle/deb/*.deb "$target"/release/bundle/rpm/*.rpm
cli="$target/release/agent-tray"
config="$(printf '{"bundle":{"linux":{"deb":{"files":{"/usr/bin/agent-tray":"%s"}},"rpm":{"files":{"/usr/bin/agent-tray":"%s"}}}}}' "$cli" "$cli")"
ui/node_modules/.bin/tauri bundle --ci --bundles deb,rpm --config "$config"

deb="$(ls -t "$target"/release/bundle/deb/*.deb | head -n 1)"
echo "==> checking the package"
contents="$(dpkg-deb -c "$deb")"
for want in usr/bin/agent-tray-desktop usr/bin/agent-tray; do
  grep -q -E " (\./)?$want\$" <<<"$contents" || { echo "the package lacks $want"; exit 1; }
done
check="$(mktemp -d)"
trap 'rm -rf "$check"' EXIT
dpkg-deb -x "$deb" "$check"
"$check/usr/bin/agent-tray" --version | grep -q '^agent-tray ' || { echo "usr/bin/agent-tray is not the CLI"; exit 1; }
# The app itself is not run (it would open a window); it must be the one that links WebKitGTK.
grep -q 'libwebkit2gtk-4.1' "$check/usr/bin/agent-tray-desktop" || { echo "usr/bin/agent-tray-desktop is not the app (no WebKitGTK)"; exit 1; }
# The menu entry launches through the CLI (src/app_launch.rs): a launch while the app runs costs
# the small static CLI's start, not the app's loading of GTK and WebKit.
entry="$(ls "$check"/usr/share/applications/*.desktop)"
grep -qx 'Exec=agent-tray open' "$entry" || { echo "$entry does not run agent-tray open:"; cat "$entry"; exit 1; }
rpm="$(ls -t "$target"/release/bundle/rpm/*.rpm | head -n 1)"
if command -v rpm2cpio >/dev/null && command -v cpio >/dev/null; then
  listed="$(rpm2cpio "$rpm" | cpio -t --quiet)"
  for want in usr/bin/agent-tray-desktop usr/bin/agent-tray; do
    grep -q -E "^(\./)?$want\$" <<<"$listed" || { echo "the .rpm lacks $want"; exit 1; }
  done
else
  echo "(rpm2cpio or cpio not installed: the .rpm's contents were not checked)"
fi
ls -l "$deb" "$rpm"
echo "$deb"
echo "$rpm"
