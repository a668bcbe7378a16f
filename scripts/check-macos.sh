#!/usr/bin/env bash
# Type-checks and lints the whole workspace for macOS (aarch64 and x86_64) on a Linux machine, so
# the macOS-only code (`#[cfg(target_os = "macos")]`) is compiled by every CI run, not first on a
# Mac.
#
#   scripts/check-macos.sh        clippy --workspace --all-targets for both targets, -D warnings
#
# `cargo clippy` never links, so no macOS SDK is needed: only the targets' standard libraries
# (rustup) and a way past the build scripts that compile C or Objective-C with cc-rs
# (objc2-exception-helper, mac-notification-sys, SQLite). They get a "compiler" that only creates
# the file after `-o` and an "archiver" that writes an empty `!<arch>` archive: empty objects are
# enough when nothing links. Both are written at run time (to the target folder, at a fixed path:
# see below) and removed at exit.
#
# Cost: one cargo invocation with both `--target` flags, in the default target folder (the host's
# build scripts and proc-macros shared with other builds) or in CHECK_MACOS_TARGET_DIR, which CI
# gives it so that it can run beside other cargo commands (cargo locks a target folder for a
# whole build).
# Says plainly what it could not do, and fails when it could not check or a check failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

targets=(aarch64-apple-darwin x86_64-apple-darwin)
say() { printf '[check-macos] %s\n' "$*"; }
fail() { printf '[check-macos] FAILED: %s\n' "$*" >&2; exit 1; }

# The targets' standard libraries (setup.sh --test installs them; this only checks).
if ! command -v rustup >/dev/null 2>&1; then
  fail "rustup not found: cannot install the macOS standard libraries (${targets[*]}), so macOS was NOT checked"
fi
installed="$(rustup target list --installed)"
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" ||
    fail "the Rust target $t is not installed (run: rustup target add $t, or scripts/setup.sh --test), so macOS was NOT checked"
done

# `tauri::generate_context!` embeds the built UI: build it when it is missing.
if [ ! -f ui/dist/index.html ]; then
  say "building the UI (ui/dist is missing; the desktop crate embeds it)"
  npm --prefix ui run build --silent >/dev/null || fail "could not build the UI (npm --prefix ui run build), so macOS was NOT checked"
fi

# The same path on every run: cc-rs makes each build script rerun when CC_<target> changes, and
# a fresh random folder each time rebuilt SQLite's and the Objective-C crates' build scripts and
# re-checked everything above them (9 minutes instead of seconds). Inside the target folder, not
# /tmp, and removed at exit.
target_dir="${CHECK_MACOS_TARGET_DIR:-${CARGO_TARGET_DIR:-$root/target}}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
tools="$target_dir/check-macos-tools"
rm -rf "$tools"
mkdir -p "$tools"
trap 'rm -rf "$tools"' EXIT

cat >"$tools/cc" <<'EOF'
#!/bin/sh
# A no-op C compiler: creates the file after -o (empty objects are enough when nothing links).
out=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    -o) shift; out="${1:-}" ;;
    -o*) out="${1#-o}" ;;
  esac
  shift
done
[ -n "$out" ] && : >"$out"
exit 0
EOF
cat >"$tools/ar" <<'EOF'
#!/bin/sh
# A no-op archiver: every .a argument becomes an empty archive.
for a in "$@"; do
  case "$a" in
    *.a) printf '!<arch>\n' >"$a" ;;
  esac
done
exit 0
EOF
chmod +x "$tools/cc" "$tools/ar"

target_flags=()
for t in "${targets[@]}"; do
  v="${t//-/_}"
  export "CC_$v=$tools/cc" "CXX_$v=$tools/cc" "AR_$v=$tools/ar"
  target_flags+=(--target "$t")
done

say "cargo clippy --workspace --all-targets ${target_flags[*]} -- -D warnings"
start=$SECONDS
if cargo clippy --workspace --all-targets --target-dir "$target_dir" "${target_flags[@]}" -- -D warnings; then
  say "ok: ${targets[*]} type-check and lint clean ($((SECONDS - start)) s)"
else
  fail "clippy for ${targets[*]} reported errors or warnings (see above; $((SECONDS - start)) s)"
fi
