#!/usr/bin/env bash
# Builds Agent Tray.app and a .dmg on a Mac, with the `agent-tray` CLI inside the app:
#
#   bash scripts/package-macos.sh                 for this Mac's architecture
#   TARGET=universal-apple-darwin bash scripts/package-macos.sh   one app for Apple silicon and Intel
#
# prints the paths of the .app and the .dmg (target/<target>/release/bundle/{macos,dmg}/). Needs
# Xcode's command-line tools (`xcode-select --install`), Rust (rustup, with the target:
# `rustup target add aarch64-apple-darwin x86_64-apple-darwin` for universal) and Node.
#
# What the app holds: Contents/MacOS/agent-tray-desktop (the app), Contents/MacOS/agent-tray
# (the CLI, through `bundle.macOS.files` in tauri.conf.json: the app's "Install hooks…" runs it,
# and the hooks call it), Contents/Info.plist merged with src-tauri/Info.plist (`LSUIElement`: a
# menu-bar app with no Dock icon; the reason macOS shows when it asks to let the app control
# Terminal or iTerm2), and the icons (icons/icon.icns).
#
# Why cargo and then `tauri bundle`, not `tauri build`: see scripts/package-deb.sh (the tauri CLI
# would take the workspace root, the core, for the app crate and pack the CLI as the app).
#
# Signing is left to you: the app is ad-hoc signed, so Gatekeeper refuses it on another Mac until
# it is signed with your Developer ID and notarized. To sign, set APPLE_SIGNING_IDENTITY (and for
# notarization APPLE_ID, APPLE_PASSWORD, APPLE_TEAM_ID) before running this script: `tauri bundle`
# reads them. For your own Mac, `xattr -dr com.apple.quarantine "Agent Tray.app"` is enough.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ "$(uname -s)" = Darwin ] || { echo "package-macos.sh runs on macOS (on Linux: scripts/package-deb.sh; scripts/check-macos.sh type-checks the macOS code)"; exit 1; }

target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
target="${TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"

echo "==> UI"
[ -d ui/node_modules ] || npm ci --prefix ui --no-audit --no-fund
npm --prefix ui run build

build() { # $1: a Rust target triple
  cargo build --release --target "$1" -p agent-tray-desktop --bin agent-tray-desktop --features tauri/custom-protocol
  cargo build --release --target "$1" -p agent-tray --bin agent-tray
}

echo "==> the app and the agent-tray CLI (release, $target)"
if [ "$target" = universal-apple-darwin ]; then
  build aarch64-apple-darwin
  build x86_64-apple-darwin
  out="$target_dir/universal-apple-darwin/release"
  mkdir -p "$out"
  for bin in agent-tray-desktop agent-tray; do
    lipo -create -output "$out/$bin" \
      "$target_dir/aarch64-apple-darwin/release/$bin" "$target_dir/x86_64-apple-darwin/release/$bin"
  done
else
  build "$target"
fi
release="$target_dir/$target/release"

echo "==> Agent Tray.app and the .dmg (tauri CLI from ui/node_modules, packing only)"
rm -rf "$release/bundle/macos" "$release/bundle/dmg"
config="$(printf '{"bundle":{"macOS":{"files":{"MacOS/agent-tray":"%s"}}}}' "$release/agent-tray")"
ui/node_modules/.bin/tauri bundle --ci --target "$target" --bundles app,dmg --config "$config"

app="$(ls -d "$release"/bundle/macos/*.app | head -n 1)"
echo "==> checking the app"
"$app/Contents/MacOS/agent-tray" --version | grep -q '^agent-tray ' || { echo "Contents/MacOS/agent-tray is not the CLI"; exit 1; }
[ "$(/usr/libexec/PlistBuddy -c 'Print :LSUIElement' "$app/Contents/Info.plist")" = true ] || { echo "Info.plist lacks LSUIElement"; exit 1; }
otool -L "$app/Contents/MacOS/agent-tray-desktop" | grep -q WebKit || { echo "Contents/MacOS/agent-tray-desktop is not the app (no WebKit)"; exit 1; }
echo "$app"
ls "$release"/bundle/dmg/*.dmg
