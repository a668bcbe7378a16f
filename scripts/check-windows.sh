#!/usr/bin/env bash
# Checks Agent Tray for Windows on this Linux machine, for real where it can:
#
#   1. clippy -D warnings of the whole workspace (core, domain, the desktop shell) for
#      x86_64-pc-windows-gnu: every `#[cfg(windows)]` line compiles and lints on every CI run;
#   2. the core's and the domain's tests (unit and integration), cross-built with mingw-w64 and
#      run under Wine (cargo's runner): the named-pipe control channel, process handles and exit
#      events, %LOCALAPPDATA%, Windows' rename and lock rules, and tests/cli_end_to_end.rs (the
#      CLI's daemon, hook, observe and list --json through the pipe, and a killed process's
#      session ended by its exit event);
#   3. the count: the tests that ran and passed under Wine against every test the Linux build
#      has; at least 90 % must, and every test that did not run is named (the reason for each
#      is beside its `cfg(unix)` or `cfg_attr(windows, ignore = "...")` in the source);
#   4. the installer (packaging/windows/agent-tray.nsi, Debian's makensis) around the CLI the tests
#      built, installed silently into a Wine prefix of its own, the installed CLI run from the
#      install folder and from the Path, uninstalled, and checked gone (scripts/windows/test-installer.sh).
#
# The desktop app itself cannot run here (WebView2 does not exist under Wine): it is only
# type-checked and linted. Fails, saying "Windows was NOT checked", when a tool is missing.
#
# Wine 8 (Debian 12) lacks bcryptprimitives.dll, which Rust's standard library (1.78 and later)
# imports for ProcessPrng; a Windows 10 machine has it. A four-line stand-in calling Wine's
# RtlGenRandom is built with mingw-w64 into the private Wine prefix (never into the binaries).
#
# The Windows build has its own target folder (target/windows) so it never evicts the Linux one,
# and its own Wine prefix inside it; wineserver is stopped at exit so nothing is left running.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target=x86_64-pc-windows-gnu
min_percent="${WINDOWS_MIN_PERCENT:-90}"
say() { printf '[check-windows] %s\n' "$*"; }
fail() { printf '[check-windows] FAILED: %s\n' "$*" >&2; exit 1; }
not_checked() { fail "$*, so Windows was NOT checked"; }

command -v rustup >/dev/null 2>&1 || not_checked "rustup not found"
rustup target list --installed | grep -qx "$target" ||
  not_checked "the Rust target $target is not installed (run: rustup target add $target, or scripts/setup.sh --test)"
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 ||
  not_checked "the mingw-w64 linker is missing (install: sudo apt-get install mingw-w64)"
wine_bin="$(command -v wine || command -v wine64 || true)"
[ -n "$wine_bin" ] || not_checked "Wine is missing (install: sudo apt-get install wine64)"
command -v wineboot >/dev/null 2>&1 || not_checked "wineboot is missing (install: sudo apt-get install wine64)"

if [ ! -f ui/dist/index.html ]; then
  say "building the UI (ui/dist is missing; the desktop crate embeds it)"
  npm --prefix ui run build --silent >/dev/null || not_checked "could not build the UI (npm --prefix ui run build)"
fi

base_target="${CARGO_TARGET_DIR:-$root/target}"
case "$base_target" in /*) ;; *) base_target="$root/$base_target" ;; esac
target_dir="$base_target/windows"
logs="$target_dir/check-logs"
mkdir -p "$logs"

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine_bin"
# shellcheck source=windows/wine-env.sh
. "$root/scripts/windows/wine-env.sh"
use_wine_prefix "$target_dir/wineprefix"
trap stop_wine EXIT

# 1. Lint the whole workspace for Windows.
say "cargo clippy --workspace --target $target --lib --bins --tests -- -D warnings"
start=$SECONDS
cargo clippy --workspace --target "$target" --target-dir "$target_dir" --lib --bins --tests -- -D warnings ||
  fail "clippy for $target found problems (above)"
say "ok: the workspace lints clean for $target ($((SECONDS - start)) s)"

# 2. The Wine prefix, once per target folder.
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  say "creating the Wine prefix $WINEPREFIX"
  timeout 300 wineboot -i >"$logs/wineboot.log" 2>&1 || not_checked "wineboot -i failed (log: $logs/wineboot.log)"
fi
system32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -f "$system32/bcryptprimitives.dll" ]; then
  say "Wine has no bcryptprimitives.dll: building the stand-in (scripts/windows/bcryptprimitives.c)"
  x86_64-w64-mingw32-gcc -shared -O2 -o "$system32/bcryptprimitives.dll" \
    scripts/windows/bcryptprimitives.c -ladvapi32 ||
    not_checked "could not build the bcryptprimitives.dll stand-in"
fi

# 3. The core's tests under Wine, one at a time: Wine's process creation has failed for a moment
# (ERROR_INTERNAL_ERROR) when two test threads started processes at once.
say "cargo test --target $target -p agent-tray-domain -p agent-tray --lib --tests (under $wine_bin)"
start=$SECONDS
set +e
cargo test --target "$target" --target-dir "$target_dir" -p agent-tray-domain -p agent-tray \
  --lib --tests --no-fail-fast -- --test-threads="${WINDOWS_TEST_THREADS:-1}" 2>&1 | tee "$logs/wine-tests.log"
wine_status=${PIPESTATUS[0]}
set -e
say "the tests under Wine took $((SECONDS - start)) s (exit $wine_status)"

read -r passed failed ignored < <(awk '
  /^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i+1) ~ /^passed;?$/) p += $i
      if ($(i+1) ~ /^failed;?$/) f += $i
      if ($(i+1) ~ /^ignored;?$/) g += $i
    }
  }
  END { print p + 0, f + 0, g + 0 }' "$logs/wine-tests.log")

# Every test the Linux build has (the core step built them; listing runs nothing), and every
# test the Windows build has (listed under Wine, tried three times: Wine's process creation can
# fail for a moment). A listing that never succeeds fails the check, with its output.
list_tests() { # out-file, then cargo's arguments
  local out="$1"; shift
  local try
  for try in 1 2 3; do
    if cargo test "$@" -p agent-tray-domain -p agent-tray --lib --tests -- --list --format terse \
      >"$out.raw" 2>"$out.err"; then
      tr -d '\r' <"$out.raw" | sed -n 's/: test$//p' | sort -u >"$out"
      return 0
    fi
    say "listing the tests failed (try $try of 3): $(tail -n 3 "$out.err" | tr '\n' ' ')"
    sleep 2
  done
  return 1
}
list_tests "$logs/linux-tests.txt" || fail "could not list the Linux build's tests (log: $logs/linux-tests.txt.err)"
list_tests "$logs/windows-tests.txt" --target "$target" --target-dir "$target_dir" ||
  fail "could not list the Windows build's tests under Wine (log: $logs/windows-tests.txt.err)"
grep -E '^test .* \.\.\. ignored' "$logs/wine-tests.log" | sed 's/^test //' >"$logs/windows-ignored.txt" || true
comm -23 "$logs/linux-tests.txt" "$logs/windows-tests.txt" >"$logs/not-built-for-windows.txt"
linux_total=$(wc -l <"$logs/linux-tests.txt")
not_built=$(wc -l <"$logs/not-built-for-windows.txt")
[ "$linux_total" -gt 0 ] || fail "could not list the Linux tests to compare with"

# Only tests the Linux build also has count (a Windows-only test adds nothing to the share).
grep -E '^test .* \.\.\. ok$' "$logs/wine-tests.log" | sed 's/^test //; s/ \.\.\. ok$//' | tr -d '\r' |
  sort -u >"$logs/windows-passed.txt"
passed_of_linux=$(comm -12 "$logs/linux-tests.txt" "$logs/windows-passed.txt" | wc -l)
percent=$((passed_of_linux * 100 / linux_total))
say "under Wine: $passed passed, $failed failed, $ignored ignored (named with their reasons above)"
say "of the Linux build's $linux_total tests: $not_built are unix-only (not built for Windows, listed in $logs/not-built-for-windows.txt):"
sed 's/^/[check-windows]   unix-only: /' "$logs/not-built-for-windows.txt"
sed 's/^/[check-windows]   ignored under Wine: /' "$logs/windows-ignored.txt"
say "of the Linux build's tests, ran and passed under Wine: $passed_of_linux of $linux_total = $percent % (at least $min_percent % needed)"

[ "$wine_status" -eq 0 ] && [ "$failed" -eq 0 ] || fail "tests failed under Wine (log: $logs/wine-tests.log)"
[ "$percent" -ge "$min_percent" ] || fail "only $percent % of the core's tests ran and passed under Wine (at least $min_percent % needed)"
# 4. The installer: built around the CLI the tests just ran, installed silently under Wine into a
# prefix of its own, the installed CLI run, then uninstalled (scripts/windows/test-installer.sh).
say "the installer (makensis, a silent install and uninstall under Wine)"
start=$SECONDS
command -v makensis >/dev/null 2>&1 || not_checked "makensis is missing (install: apt-get install nsis, or scripts/setup.sh --test)"
stop_wine
scripts/windows/test-installer.sh "$target_dir/$target/debug/agent-tray.exe" ||
  fail "the installer test failed (above)"
say "ok: the installer carries the CLI onto the Path and off it again ($((SECONDS - start)) s)"
say "ok: Windows checked (clippy clean; $passed tests passed under Wine, $percent % of the core's; the installer)"
