//! What the tray host's messages say about the tray menu as a whole (opening, closed), read from
//! dbusmenu calls (a StatusNotifierItem host) or GtkWidget signals (an XEmbed tray's menu drawn
//! in the app). The shell (`src-tauri/src/menu_prewarm.rs`) listens and starts or drops the
//! pages a menu can open; the reading is here, pure.

/// What a dbusmenu call says about the menu as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MenuSignal {
    Opening,
    Closed,
}

/// The menu's root item in dbusmenu: its opening and closing are the whole menu's.
const ROOT: i32 = 0;

/// What the dbusmenu method `member` says, given the item ids it names and, for events, their
/// event names (`ids[i]` with `events[i]`). Only the root item counts.
pub fn classify(member: &str, ids: &[i32], events: &[&str]) -> Option<MenuSignal> {
    match member {
        "AboutToShow" | "AboutToShowGroup" => ids.contains(&ROOT).then_some(MenuSignal::Opening),
        "Event" | "EventGroup" => ids.iter().zip(events).find_map(|(&id, &event)| {
            (id == ROOT).then_some(event).and_then(|event| match event {
                "opened" => Some(MenuSignal::Opening),
                "closed" => Some(MenuSignal::Closed),
                _ => None,
            })
        }),
        _ => None,
    }
}

/// What a GtkWidget `map` or `unmap` says about the tray's menu drawn in this process: only a
/// menu attached to no widget is the tray's.
pub fn classify_widget(signal: &str, is_menu: bool, attached: bool) -> Option<MenuSignal> {
    if !is_menu || attached {
        return None;
    }
    match signal {
        "map" => Some(MenuSignal::Opening),
        "unmap" => Some(MenuSignal::Closed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_items_about_to_show_or_opened_event_is_the_menu_opening() {
        assert_eq!(
            classify("AboutToShow", &[0], &[]),
            Some(MenuSignal::Opening)
        );
        assert_eq!(
            classify("AboutToShowGroup", &[3, 0], &[]),
            Some(MenuSignal::Opening)
        );
        assert_eq!(
            classify("Event", &[0], &["opened"]),
            Some(MenuSignal::Opening)
        );
        assert_eq!(
            classify("EventGroup", &[5, 0], &["hovered", "opened"]),
            Some(MenuSignal::Opening)
        );
    }

    #[test]
    fn the_root_items_closed_event_is_the_menu_closing() {
        assert_eq!(
            classify("Event", &[0], &["closed"]),
            Some(MenuSignal::Closed)
        );
        assert_eq!(
            classify("EventGroup", &[0], &["closed"]),
            Some(MenuSignal::Closed)
        );
    }

    #[test]
    fn a_menu_attached_to_nothing_mapped_or_unmapped_is_the_tray_menu_drawn_in_the_app() {
        assert_eq!(
            classify_widget("map", true, false),
            Some(MenuSignal::Opening)
        );
        assert_eq!(
            classify_widget("unmap", true, false),
            Some(MenuSignal::Closed)
        );
        // A page's context menu is attached to its webview; other widgets are not menus.
        assert_eq!(classify_widget("map", true, true), None);
        assert_eq!(classify_widget("map", false, false), None);
        assert_eq!(classify_widget("unmap", false, false), None);
        // Shown is not on screen: the tray shows each menu it builds, long before any popup.
        assert_eq!(classify_widget("show", true, false), None);
        assert_eq!(classify_widget("hide", true, false), None);
    }

    #[test]
    fn items_clicks_and_other_calls_say_nothing_about_the_menu() {
        // A click on an item is the item's own business (the menu handler opens the page).
        assert_eq!(classify("Event", &[7], &["clicked"]), None);
        assert_eq!(classify("Event", &[0], &["clicked"]), None);
        // A submenu about to show, and calls that only read the menu.
        assert_eq!(classify("AboutToShow", &[4], &[]), None);
        assert_eq!(classify("GetLayout", &[0], &[]), None);
        assert_eq!(classify("Event", &[7], &["opened"]), None);
    }
}
