#!/usr/bin/env bash
# Fuzzes every parser of outside input for SECONDS each and prints a summary table.
#
#   scripts/fuzz.sh SECONDS [TARGET...]      e.g.  nice -n 15 scripts/fuzz.sh 60
#   FUZZ_TOOLCHAIN=stable scripts/fuzz.sh …  use stable + RUSTC_BOOTSTRAP=1 even when nightly exists
#
# The targets live in fuzz/ (a crate of its own, outside the workspace; see fuzz/README.md). They
# run under libFuzzer through `cargo fuzz`, with AddressSanitizer and debug assertions (so an
# integer overflow is a crash, not a silent wrap). cargo-fuzz needs nightly compiler flags: a
# nightly toolchain is used when rustup has one, else the stable compiler with RUSTC_BOOTSTRAP=1.
#
# Each target starts from a seed corpus built from the recorded agent fixtures (tests/fixtures)
# and a few hand-written lines, kept in fuzz/corpus/<target>/ (not committed) and grown by each
# run. A crash stops that target (libFuzzer's default) and leaves its input in
# fuzz/artifacts/<target>/; the other targets still run. The exit status is non-zero when any
# target crashed or could not run. CI does not run this (it takes minutes of CPU per target).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"

usage() { echo "usage: scripts/fuzz.sh SECONDS [TARGET...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
seconds="$1"; shift
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed; installing it (cargo install cargo-fuzz --locked, a few minutes)"
  if ! cargo install cargo-fuzz --locked; then
    echo "error: could not install cargo-fuzz. Install it by hand (cargo install cargo-fuzz --locked)" >&2
    echo "       with network access to crates.io, then run this script again." >&2
    exit 2
  fi
fi

# Nightly when rustup has one; otherwise stable, allowed to take nightly flags.
# FUZZ_TOOLCHAIN=stable forces the second way (to check it works where no nightly is installed).
fuzz=(cargo fuzz)
if [ "${FUZZ_TOOLCHAIN:-}" != stable ] && rustup run nightly rustc --version >/dev/null 2>&1; then
  fuzz=(cargo +nightly fuzz)
  toolchain="nightly ($(rustup run nightly rustc --version))"
else
  export RUSTC_BOOTSTRAP=1
  if [ "${FUZZ_TOOLCHAIN:-}" = stable ] && command -v rustup >/dev/null 2>&1; then
    fuzz=(cargo +stable fuzz)
  fi
  toolchain="stable with RUSTC_BOOTSTRAP=1 ($(rustc +stable --version 2>/dev/null || rustc --version))"
fi
echo "toolchain: $toolchain"

mapfile -t all_targets < <("${fuzz[@]}" list)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
[ "${#targets[@]}" -gt 0 ] || { echo "error: no fuzz targets found in fuzz/" >&2; exit 2; }

# ---- seed corpora -------------------------------------------------------------------------------
fixtures="$root/tests/fixtures"
seed() { # seed TARGET NAME < bytes
  mkdir -p "corpus/$1"
  cat > "corpus/$1/seed-$2"
}
seed_lines() { # seed_lines TARGET PREFIX FILE: one seed per line of FILE
  local n=0 line
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    printf '%s' "$line" | seed "$1" "$2-$n"
  done < "$3"
}
obs='{"session_id":"s1","agent":"claude","event":"PreToolUse","at":"2026-01-01T00:00:00Z","cwd":"/home/dev/proj","tool":"Bash"}'
for f in "$fixtures"/claude/*/hooks.jsonl "$fixtures"/codex/*/hooks.jsonl; do
  [ -f "$f" ] || continue
  tag="$(basename "$(dirname "$(dirname "$f")")")"
  if command -v jq >/dev/null 2>&1; then
    # The flag byte first (0: no --agent), then exactly what the hook read on stdin.
    n=0
    while IFS= read -r payload; do
      n=$((n + 1))
      { printf '\0'; printf '%s' "$payload"; } | seed hook_payload "$tag-$n"
    done < <(jq -c '.payload' "$f")
  else
    seed_lines hook_payload "$tag-raw" "$f"
  fi
done
for f in "$fixtures"/codex/*/notify-argv.jsonl; do
  [ -f "$f" ] || continue
  if command -v jq >/dev/null 2>&1; then
    n=0
    while IFS= read -r arg; do
      n=$((n + 1)); printf '%s' "$arg" | seed codex_notify "$n"
    done < <(jq -r '.argv[-1]' "$f")
  fi
done
printf '{"type":"agent-turn-complete","thread-id":"t1","turn-id":"u1","cwd":"/home/dev/proj"}' | seed codex_notify hand
printf '{"v":1,"observation":%s}\n{"v":1,"observation":%s,"cut":true}\n' "$obs" "$obs" | seed journal_lines hand
for f in "$fixtures"/claude/*/transcript-*.jsonl; do
  [ -f "$f" ] || continue
  seed_lines claude_transcript_line transcript "$f"
  seed claude_transcript_line whole < "$f"
done
for f in "$fixtures"/codex/*/rollout-*.jsonl; do
  [ -f "$f" ] || continue
  seed_lines codex_rollout_line rollout "$f"
done
for f in "$fixtures"/pi/*/session-*.jsonl; do
  [ -f "$f" ] || continue
  seed_lines pi_session_line session "$f"
  seed pi_session_line whole < "$f"
done
for f in "$fixtures"/claude/*/sessions-*.json; do
  [ -f "$f" ] || continue
  seed claude_sessions_file "$(basename "$f")" < "$f"
done
for pid in self 1; do
  [ -r "/proc/$pid/stat" ] && seed proc_stat "$pid" < "/proc/$pid/stat"
done
printf '4242 (a) b (c)) S 1 4242 4242 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 1 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n' | seed proc_stat hand
[ -r /proc/locks ] && seed proc_locks machine < /proc/locks
printf '1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 4243 08:01:1234567 0 EOF\n' | seed proc_locks hand
for req in '{"v":1,"op":"list"}' '{"v":1,"op":"ping"}' '{"v":1,"op":"watch"}' '{"v":1,"op":"history","limit":50}' \
  "{\"v\":1,\"op\":\"observe\",\"observation\":$obs}"; do
  printf '%s' "$req" | seed control_request "$(printf '%s' "$req" | cksum | cut -d' ' -f1)"
done
hooks_obj='{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/opt/agent-tray/bin/agent-tray hook --agent claude"}]}],"Stop":[{"hooks":[{"type":"command","command":"other-tool --flag"}]}]}}'
printf '{\n  "model": "opus",\n  "n": 1e3,\n  "permissions": {"allow": []}\n}\n' | seed claude_settings user
printf '%s\n' "$hooks_obj" | seed claude_settings hooked
printf '%s\0model = "o4"\nnotify = ["other", "x"]\n[projects."/home/dev/p"]\ntrust_level = "trusted"\n' "$hooks_obj" | seed codex_config hooked
printf '{}\0# comment only\n' | seed codex_config empty
s1='{"session_id":"s1","agent":"claude","state":"waiting_for_permission","cwd":"/srv/api","started_at":"2026-11-30T10:00:00Z","last_seen":"2026-11-30T10:05:00Z","state_since":"2026-11-30T10:04:00Z","host":"other","pending":[{"id":"r12-9f3a2b7c","agent":"claude","tool":"Bash","command":"rm -rf /","asked_at":"2026-11-30T10:04:00Z","answer_by":"2026-11-30T10:09:00Z"}]}'
printf '{"kind":"snapshot","protocol":1,"version":"0.9.0","sessions":[%s,0,{"x":1}],"ended":[]}' "$s1" | seed remote_line snapshot
printf '{"kind":"changed","session":%s}' "$s1" | seed remote_line changed
printf '{"kind":"resync","sessions":[%s]}' "$s1" | seed remote_line resync
printf '{"kind":"removed","session_id":"s1"}' | seed remote_line removed

# ---- build, then run ----------------------------------------------------------------------------
# --debug-assertions: arithmetic overflow and debug_assert! are crashes too.
build_flags=(--debug-assertions)
echo "building ${#targets[@]} fuzz targets (release, ASan, debug assertions)…"
for t in "${targets[@]}"; do
  if ! "${fuzz[@]}" build "${build_flags[@]}" "$t"; then
    echo "error: building fuzz target $t failed (see above)" >&2
    exit 2
  fi
done

mkdir -p logs
rows=()
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  before="$(find "artifacts/$t" -type f | sort)"
  log="logs/$t.log"
  echo "fuzzing $t for ${seconds}s (log: fuzz/$log)"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: 2 GB is a leak or a blow-up.
  "${fuzz[@]}" run "${build_flags[@]}" "$t" "$root/fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$log" 2>&1
  rc=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')"
  peak="$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')"
  corpus="$(find "corpus/$t" -type f | wc -l)"
  new_artifacts="$(comm -13 <(printf '%s\n' "$before") <(find "artifacts/$t" -type f | sort) | sed '/^$/d')"
  crashes="$(printf '%s' "$new_artifacts" | grep -c . || true)"
  note=""
  if [ "$crashes" -gt 0 ]; then
    note="fuzz/$(printf '%s\n' "$new_artifacts" | head -1)"
    status=1
  elif [ "$rc" -ne 0 ]; then
    note="exit $rc, see fuzz/$log"
    status=1
  fi
  rows+=("$(printf '%-24s %12s %8s %8s %8s  %s' "$t" "${runs:-?}" "$corpus" "$crashes" "${peak:-?}" "$note")")
done

printf '\n%-24s %12s %8s %8s %8s  %s\n' target runs corpus crashes "rss MB" note
for r in "${rows[@]}"; do echo "$r"; done
echo "(${seconds}s per target; toolchain: $toolchain)"
exit "$status"
