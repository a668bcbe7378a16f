#!/usr/bin/env bash
# The remote soak test at full length: a remote that drops and reconnects about every 12 s for
# ten minutes (or SECONDS) while local hooks arrive every 50 ms; nothing may be lost and the
# engine's memory, descriptors and children must stay flat. CI runs the same test for 75 s.
#
#   scripts/soak-remote.sh [SECONDS]      (default 600)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
AGENT_TRAY_SOAK_SECS="${1:-600}" exec cargo test -p agent-tray --test remote_soak -- --nocapture
