//! The popover's decisions: what a click on the tray icon does, where the popover goes, and
//! whether losing the focus closes it. The shell (`src-tauri/src/popover.rs`) executes them.
//!
//! A click on the icon while the popover is open first takes the focus from it, which closes it,
//! and only then arrives as a click: without [`toggle`]'s memory of that close, the click would
//! open it again at once and the icon could never close it.

use std::time::Duration;

/// What a click on the tray icon does to the popover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    Open,
    Close,
    /// It just closed because this very click took its focus: leave it closed.
    StayClosed,
}

/// How long after the popover closed on losing the focus a click on the icon is taken to be the
/// click that took it.
pub const FOCUS_LOSS_CLICK: Duration = Duration::from_millis(400);

/// What a click on the icon does, from whether the popover is open and how long ago it closed
/// on losing the focus.
pub fn toggle(open: bool, closed_on_focus_loss_ago: Option<Duration>) -> Toggle {
    if open {
        Toggle::Close
    } else if closed_on_focus_loss_ago.is_some_and(|ago| ago < FOCUS_LOSS_CLICK) {
        Toggle::StayClosed
    } else {
        Toggle::Open
    }
}

/// Where the popover goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Centred under the icon (the tray reported where it is: macOS, Windows).
    UnderTrayIcon,
    /// The screen's top right corner: where Linux trays usually sit, whose position is never
    /// reported.
    TopRight,
}

pub fn placement(tray_rect_known: bool) -> Placement {
    if tray_rect_known {
        Placement::UnderTrayIcon
    } else {
        Placement::TopRight
    }
}

/// Whether losing the focus closes it: only once it has had the focus (a window shown without
/// it, which some window managers do, would otherwise close before the user saw it).
pub fn closes_on_focus_loss(had_focus: bool) -> bool {
    had_focus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_opens_a_closed_popover_and_closes_an_open_one() {
        assert_eq!(toggle(false, None), Toggle::Open);
        assert_eq!(toggle(true, None), Toggle::Close);
        // Long after it last closed on its own, a click opens it again.
        assert_eq!(toggle(false, Some(Duration::from_secs(5))), Toggle::Open);
    }

    #[test]
    fn the_click_that_took_the_focus_from_the_popover_does_not_reopen_it() {
        // The user clicks the icon to close the open popover: the focus leaves it first (it
        // closes), then the click arrives with the popover already gone.
        assert_eq!(
            toggle(false, Some(Duration::from_millis(30))),
            Toggle::StayClosed
        );
        assert_eq!(toggle(false, Some(FOCUS_LOSS_CLICK)), Toggle::Open);
    }

    #[test]
    fn the_popover_goes_under_the_icon_when_the_tray_said_where_it_is_else_top_right() {
        assert_eq!(placement(true), Placement::UnderTrayIcon);
        // Linux: tray hosts never report the icon's rectangle.
        assert_eq!(placement(false), Placement::TopRight);
    }

    #[test]
    fn only_a_popover_that_had_the_focus_closes_when_it_loses_it() {
        assert!(closes_on_focus_loss(true));
        assert!(!closes_on_focus_loss(false));
    }
}
