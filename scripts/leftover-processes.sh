#!/usr/bin/env bash
# Lists, and with --kill ends, the processes a test run left behind: those whose environment
# holds NAME=VALUE. A run exports a mark of its own (a unique value) before it starts anything;
# every process it starts inherits it, however deeply forked, detached (setsid, double fork) or
# re-parented, and also what a private D-Bus daemon activates. No cgroup or process group
# is needed, and other runs' processes (another value) are never touched.
#
# Usage: scripts/leftover-processes.sh [--kill] NAME=VALUE
# The caller and its ancestors carry the mark too and are not counted. Each leftover is listed
# on stderr (pid, parent, age, command line). --kill sends SIGTERM to each by pid, waits up to
# 5 s, then SIGKILLs the ones still there.
# Exit status: 0 when nothing was left, 1 when something was (killed or not), 2 on bad usage.
set -uo pipefail

kill=0
if [ "${1:-}" = "--kill" ]; then kill=1; shift; fi
mark="${1:-}"
case "$mark" in
  ?*=?*) ;;
  *) echo "usage: $0 [--kill] NAME=VALUE" >&2; exit 2 ;;
esac

# This script and its ancestors (the run that asks) are not leftovers.
declare -A skip=()
pid=$$
while [ -n "$pid" ] && [ "$pid" != 0 ] && [ -z "${skip[$pid]:-}" ]; do
  skip[$pid]=1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || break
  # Fields after the command name, which is in parentheses and may hold spaces: state ppid ...
  read -r _state pid _rest <<<"${stat##*) }"
done

# Prints the pids carrying the mark (reads /proc/<pid>/environ: the environment at exec).
marked() {
  skip[$BASHPID]=1
  local dir p v
  local -a vars
  for dir in /proc/[0-9]*; do
    p="${dir#/proc/}"
    [ -n "${skip[$p]:-}" ] && continue
    vars=()
    { mapfile -d '' -t vars <"$dir/environ"; } 2>/dev/null || continue
    for v in "${vars[@]}"; do
      if [ "$v" = "$mark" ]; then echo "$p"; break; fi
    done
  done
}

# A process's state letter (Z: a zombie, gone but for its parent's wait).
state_of() {
  local stat state
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  read -r state _ <<<"${stat##*) }"
  echo "$state"
}

describe() {
  local p="$1" cmd
  cmd="$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
  printf '  pid %s (parent %s, %ss old): %s\n' "$p" \
    "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" \
    "$(ps -o etimes= -p "$p" 2>/dev/null | tr -d ' ')" "${cmd:-?}" >&2
}

mapfile -t left < <(marked)
if [ "${#left[@]}" -eq 0 ]; then
  exit 0
fi
echo "leftover processes carrying ${mark%%=*} (started by this run, still running):" >&2
for p in "${left[@]}"; do describe "$p"; done
if [ "$kill" = 1 ]; then
  for p in "${left[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=()
    for p in "${left[@]}"; do
      state="$(state_of "$p")" && [ "$state" != Z ] && alive+=("$p")
    done
    [ "${#alive[@]}" -eq 0 ] && break
    sleep 0.1
  done
  for p in "${alive[@]+"${alive[@]}"}"; do kill -KILL "$p" 2>/dev/null || true; done
  echo "  (ended: ${left[*]})" >&2
fi
exit 1
