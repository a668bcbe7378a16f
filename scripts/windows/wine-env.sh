# Sourced by scripts/check-windows.sh and scripts/windows/test-installer.sh: one console-only Wine
# prefix per caller, and how to end everything running in it.
#
#   use_wine_prefix DIR   exports WINEPREFIX=DIR and the quiet, windowless settings below
#   stop_wine             ends every Wine process of the prefix and waits (bounded) for
#                         wineserver itself to go

use_wine_prefix() {
  export WINEPREFIX="$1"
  export WINEDEBUG=-all
  # No window, no desktop integration, no menu entries: a console-only prefix.
  export WINEDLLOVERRIDES="winemenubuilder.exe=d;mshtml=d;mscoree=d"
  export DISPLAY=
}

stop_wine() {
  WINEPREFIX="$WINEPREFIX" wineserver -k >/dev/null 2>&1 || true
  WINEPREFIX="$WINEPREFIX" timeout 20 wineserver -w >/dev/null 2>&1 || true
}
