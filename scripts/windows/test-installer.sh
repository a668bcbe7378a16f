#!/usr/bin/env bash
# Builds the Windows installer (packaging/windows/agent-tray.nsi, Debian's makensis) around a
# cross-built agent-tray.exe, installs it silently (/S) under Wine into a private prefix, runs the
# installed CLI (`--version`, `install --claude --dry-run`, `doctor`, and `--version` again by
# its name alone, found on the Path the installer wrote), uninstalls it and checks that the files
# and the Path entry are gone.
#
#   scripts/windows/test-installer.sh CLI_EXE [DESKTOP_EXE]
#
# Called by scripts/check-windows.sh with the CLI its tests built. The desktop app is packed
# when an exe is given; it is never run here (WebView2 does not exist under Wine).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
say() { printf '[installer] %s\n' "$*"; }
fail() { printf '[installer] FAILED: %s\n' "$*" >&2; exit 1; }

cli="${1:?usage: test-installer.sh CLI_EXE [DESKTOP_EXE]}"
desktop="${2:-}"
[ -f "$cli" ] || fail "no CLI at $cli"
cli="$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")"
[ -z "$desktop" ] || desktop="$(cd "$(dirname "$desktop")" && pwd)/$(basename "$desktop")"
command -v makensis >/dev/null 2>&1 || fail "makensis is missing (install: apt-get install nsis)"
wine_bin="$(command -v wine || command -v wine64 || true)"
[ -n "$wine_bin" ] || fail "Wine is missing (install: apt-get install wine64)"

base_target="${CARGO_TARGET_DIR:-$root/target}"
case "$base_target" in /*) ;; *) base_target="$root/$base_target" ;; esac
work="$base_target/windows/installer"
mkdir -p "$work"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
setup="$work/AgentTray-$version-x64.exe"

start=$SECONDS
defines=(-DCLI="$cli" -DVERSION="$version" -DOUTFILE="$setup" -DFAST)
[ -n "$desktop" ] && defines+=(-DDESKTOP="$desktop")
makensis -V2 "${defines[@]}" "$root/packaging/windows/agent-tray.nsi" >"$work/makensis.log" 2>&1 ||
  { cat "$work/makensis.log" >&2; fail "makensis could not build the installer"; }
say "built $(basename "$setup") ($(( $(stat -c %s "$setup") / 1024 / 1024 )) MiB) in $((SECONDS - start)) s"

# A prefix of its own, so the check's prefix never holds an installed copy.
# shellcheck source=wine-env.sh
. "$root/scripts/windows/wine-env.sh"
use_wine_prefix "$work/wineprefix"
trap stop_wine EXIT
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  say "creating the Wine prefix $WINEPREFIX"
  timeout 300 wineboot -i >"$work/wineboot.log" 2>&1 || fail "wineboot -i failed (log: $work/wineboot.log)"
fi
system32="$WINEPREFIX/drive_c/windows/system32"
[ -f "$system32/bcryptprimitives.dll" ] ||
  x86_64-w64-mingw32-gcc -shared -O2 -o "$system32/bcryptprimitives.dll" \
    "$root/scripts/windows/bcryptprimitives.c" -ladvapi32 || fail "could not build the bcryptprimitives.dll stand-in"

user_path() { "$wine_bin" reg query 'HKCU\Environment' /v Path 2>/dev/null | tr -d '\r' | sed -n 's/.*REG_[A-Z_]*SZ *//p'; }
# A Path entry of the user's own, to be kept through install and uninstall.
"$wine_bin" reg add 'HKCU\Environment' /v Path /t REG_EXPAND_SZ /d 'C:\users\kept' /f >/dev/null 2>&1

win_dir='C:\users\'"$(whoami)"'\AppData\Local\Programs\Agent Tray'
unix_dir="$WINEPREFIX/drive_c/users/$(whoami)/AppData/Local/Programs/Agent Tray"

start=$SECONDS
timeout 120 "$wine_bin" "$setup" /S || fail "the silent install failed"
[ -f "$unix_dir/agent-tray.exe" ] || fail "agent-tray.exe is not in $unix_dir after the install"
[ -f "$unix_dir/uninstall.exe" ] || fail "no uninstaller in $unix_dir"
path_now="$(user_path)"
case ";$path_now;" in *";$win_dir;"*) ;; *) fail "the user's Path does not name $win_dir: $path_now" ;; esac
case ";$path_now;" in *';C:\users\kept;'*) ;; *) fail "the install lost the user's own Path entry: $path_now" ;; esac
say "installed into $win_dir and on the user's Path in $((SECONDS - start)) s"

# The installed CLI, in a private world: nothing of the prefix user's own is read or written.
world="$(mktemp -d)"
trap 'stop_wine; rm -rf "$world"' EXIT
mkdir -p "$world/home" "$world/claude" "$world/tray"
win_of() { printf 'Z:%s' "$(printf '%s' "$1" | tr / '\\')"; }
export AGENT_TRAY_HOME="$(win_of "$world/tray")" USERPROFILE="$(win_of "$world/home")"
export HOME="$USERPROFILE" CLAUDE_CONFIG_DIR="$(win_of "$world/claude")" CODEX_HOME="$(win_of "$world/home")"
installed="$win_dir\\agent-tray.exe"

out="$(timeout 60 "$wine_bin" "$installed" --version | tr -d '\r')" || fail "the installed agent-tray.exe --version failed"
case "$out" in *"$version"*) ;; *) fail "--version said '$out', not $version" ;; esac
say "installed --version: $out"

out="$(timeout 60 "$wine_bin" "$installed" install --claude --dry-run 2>&1 | tr -d '\r')" ||
  fail "install --claude --dry-run failed: $out"
# The hooks name the CLI in the unversioned install folder (forward slashes: Git Bash's form).
case "$out" in *"$(printf '%s' "$win_dir" | tr '\\' /)/agent-tray.exe"*) ;;
  *) fail "install --claude --dry-run does not name the installed CLI: $out" ;; esac
say "install --claude --dry-run names $win_dir\\agent-tray.exe"

set +e
out="$(timeout 60 "$wine_bin" "$installed" doctor 2>&1 | tr -d '\r')"
status=$?
set -e
# No engine runs in this world, so doctor reports problems (exit 1); it must run and say so.
[ "$status" -le 1 ] || fail "doctor exited $status: $out"
case "$out" in *"Agent Tray"*) ;; *) fail "doctor printed no findings: $out" ;; esac
say "installed doctor ran (exit $status)"

# Found by its name alone on the Path the installer wrote (a new process reads it).
out="$(timeout 60 "$wine_bin" cmd /c "agent-tray.exe --version" 2>&1 | tr -d '\r')" || true
case "$out" in *"$version"*) say "found on the Path by name: $out" ;;
  *) fail "agent-tray.exe is not found on the Path by name: $out" ;; esac

start=$SECONDS
timeout 120 "$wine_bin" "$unix_dir/uninstall.exe" /S || fail "the silent uninstall failed"
# The uninstaller runs from a copy of itself in the temp folder: wait (bounded) for it.
for _ in $(seq 100); do [ -e "$unix_dir" ] || break; sleep 0.1; done
[ ! -e "$unix_dir/agent-tray.exe" ] || fail "agent-tray.exe is still there after the uninstall"
[ ! -e "$unix_dir" ] || fail "the install folder is still there after the uninstall: $(ls "$unix_dir")"
path_now="$(user_path)"
case ";$path_now;" in *";$win_dir;"*) fail "the Path still names $win_dir after the uninstall: $path_now" ;; esac
[ "$path_now" = 'C:\users\kept' ] || fail "the uninstall changed the user's other Path entries: $path_now"
say "uninstalled in $((SECONDS - start)) s: the files and the Path entry are gone, the user's own entry kept"
