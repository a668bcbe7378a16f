#!/usr/bin/env bash
# The linker cargo runs on Linux (set in .cargo/config.toml). It links the `agent-tray` binary
# statically, and passes every other link through to `cc` unchanged.
#
# Why: `agent-tray hook` runs on every agent event, and a whole process start is most of its cost.
# Dynamically linked, the loader maps libc, libm and libgcc_s and applies ~5,700 relocations,
# which copies the pages they touch (~130 page faults against `true`'s ~50); statically linked
# and not position-independent there is no loader, no relocation, ~70 page faults. Measured
# with benches/hook_overhead.sh, the hook went from ~1.6x to ~1.3x the cost of `true`.
# Safe because the binary uses nothing of glibc that needs shared objects at run time (no NSS:
# no getpwnam/getaddrinfo; the home folder comes from $HOME): a static link that pulled one in
# would print glibc's "Using 'getpwnam' in statically linked applications" warning.
#
# How: rustc links through `cc` with `-pie`, `-Wl,-Bdynamic -lgcc_s`. For the one binary (cargo
# sets CARGO_PKG_NAME and CARGO_BIN_NAME while it compiles a binary; rustc passes its environment
# to the linker) this swaps `-pie` for `-static -no-pie`, drops `-Wl,-Bdynamic` and takes the
# unwinder from libgcc_eh.a (what rustc itself uses with crt-static). Needs the static glibc
# (libc6-dev, part of build-essential). Should the static link fail (no libc.a, another
# toolchain), the normal dynamic link is made instead and a warning is printed: the binary works
# either way; tests/hook_cli.rs checks that it is static.
#
set -u
cc=cc

if [ "${CARGO_PKG_NAME:-}" != "agent-tray" ] || [ "${CARGO_BIN_NAME:-}" != "agent-tray" ]; then
  exec "$cc" "$@"
fi

static=()
for arg in "$@"; do
  case "$arg" in
    -pie) static+=(-static -no-pie) ;;
    -Wl,-Bdynamic) ;;
    -lgcc_s) static+=(-lgcc_eh) ;;
    *) static+=("$arg") ;;
  esac
done
"$cc" "${static[@]}" && exit 0
echo "warning: scripts/link-static-cli.sh: the static link of agent-tray failed; linking it dynamically (the hook starts slower)" >&2
exec "$cc" "$@"
