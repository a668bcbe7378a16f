#!/bin/sh
# dunst's "dmenu" in the desktop tests: the context menu (`dunstctl context`) offers every
# action of the alerts on screen, one per line ("#Allow [summary]"); this logs the menu and
# picks the first line holding what the test wrote to $DUNST_PICK_FILE ("#Allow" when empty).
# dunst then sends ActionInvoked for that alert and action, as it does for a person's choice.
menu="$(cat)"
printf '%s\n---\n' "$menu" >>"${DUNST_MENU_LOG:-/dev/null}"
want="$(cat "${DUNST_PICK_FILE:-/dev/null}" 2>/dev/null)"
printf '%s\n' "$menu" | grep -F -m1 -- "${want:-#Allow}"
