#!/usr/bin/env bash
# Fails when anything tracked in the repository refers to a path outside it: a folder the
# developers had beside the clone, their workspace root, their home directory, or design notes
# that were never committed. A user who clones the project has none of those, so a test, a
# benchmark or a doc that reads them breaks (or misleads) on every machine but one.
#
# What counts as "outside" (extended regular expressions, see `patterns` below):
#   - the sibling folder the project grew up beside (two dots, a slash, "shared");
#   - the development machine's workspace root (`/work` at the top of the file system, not a
#     `tmp/work` folder);
#   - an absolute home: root's, a macOS user's, or a Linux user's other than the made-up homes
#     that examples in tests and docs use (/home/dev, /home/me, …, listed in `example_homes`);
#   - the design notes' own paths (spec/…, seeds/…, design/… .md): the repository's docs/ replaces them.
#
# The recorded agent fixtures (tests/fixtures/**, except their README.md files) are left out:
# they are data, byte for byte what the real agents wrote on the recording machine, and they
# legitimately hold that machine's absolute paths (a project folder named "work", a bundler's
# "/$bunfs/root/…"). Their README files are prose and are checked like everything else.
#
# Each pattern is spelled so that it does not match its own text (e.g. "[.][.]"), and the
# self-test's samples carry an X that is taken out before use, so this file needs no exception. The self-test below proves every pattern still catches what it is for,
# and lets through the legitimate text it must not catch.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

boundary='(^|[^[:alnum:]_.~/$-])' # what may precede an absolute path: not part of another path
patterns=(
  '[.][.]/shared'
  "${boundary}/wor[k]/"
  "${boundary}/roo[t]/"
  "${boundary}/User[s]/[[:alnum:]]"
  '(spec/(behaviour|formats)|seeds/pid_watcher|design/(style|architecture))[.](md|rs)'
)
# Linux homes: any /home/<name>/ except the made-up ones examples use. ERE has no negative
# look-ahead, so these are matched first and the example names filtered out after.
home_pattern="${boundary}/hom[e]/[[:alnum:]_.-]+/"
example_homes='(dev|me|a|user|alice|bob)'

# ---- self-test: every pattern catches its case, none catches legitimate text --------------------
must_catch=(
  'see ..X/sharXed/spec for the rules'
  'fixtures under /Xwork/sharXed/fixtures'
  'HOME=/Xroot/.cache'
  'open /XUsers/alice/code'
  'the rules of specX/behaviour.md'
  'seedsX/pid_watcher.rs.txt'
)
home_catch=('cd /Xhome/jsmith/project' 'ls /Xhome/ci-runner/work')
must_pass=(
  'the shared folder and shared state'
  '/home/dev/proj'
  '~/.gemini/tmp/work/chats/session.jsonl'
  "argv ['bun','/\$bunfs/root/src/cli/tui/worker.js']"
  'docs/behaviour.md and docs/formats.md'
  'a network/work/ queue'
)
joined="$(IFS='|'; printf '%s' "${patterns[*]}")"
selftest_ok=1
for text in "${must_catch[@]}"; do
  text="${text//X/}"
  if ! printf '%s\n' "$text" | grep -Eq -- "$joined"; then
    echo "check-standalone self-test: no pattern catches: $text" >&2; selftest_ok=0
  fi
done
for text in "${home_catch[@]}"; do
  text="${text//X/}"
  if ! printf '%s\n' "$text" | grep -Eo -- "$home_pattern" | grep -Evq "/home/${example_homes}/\$"; then
    echo "check-standalone self-test: the home pattern misses: $text" >&2; selftest_ok=0
  fi
done
for text in "${must_pass[@]}" 'cwd /home/dev/proj' 'x /home/me/my tools/agent-tray'; do
  if printf '%s\n' "$text" | grep -Eq -- "$joined" \
    || printf '%s\n' "$text" | grep -Eo -- "$home_pattern" | grep -Evq "/home/${example_homes}/\$"; then
    echo "check-standalone self-test: a pattern wrongly catches: $text" >&2; selftest_ok=0
  fi
done
[ "$selftest_ok" = 1 ] || exit 2

# ---- the check ----------------------------------------------------------------------------------
args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  scope() { # the files checked: everything tracked but the fixtures' data
    git grep "$@" -- . ':(exclude)tests/fixtures'
    git grep "$@" -- 'tests/fixtures/**/README.md'
  }
else
  # An unpacked archive: every file but build output, installed packages and the fixtures' data.
  echo "(not a git checkout: checking the files under $root)"
  scope() {
    grep -r "$@" --exclude-dir=.git --exclude-dir=target --exclude-dir=node_modules \
      --exclude-dir=dist --exclude-dir=fixtures --exclude-dir=corpus --exclude-dir=artifacts \
      --exclude-dir=logs . | sed 's#^\./##'
    find tests/fixtures -name README.md -exec grep -H "$@" {} +
  }
fi
hits="$(
  scope -n -I -E "${args[@]}"
  scope -n -I -o -E "$home_pattern" | grep -Ev "/home/${example_homes}/\$"
)"
if [ -n "$hits" ]; then
  echo "These tracked files refer to paths outside the repository (a fresh clone has none of them):"
  printf '%s\n' "$hits"
  echo "Point them at something in the repository (docs/, tests/fixtures/) or write the text out."
  exit 1
fi
echo "no tracked file refers to a path outside the repository"
