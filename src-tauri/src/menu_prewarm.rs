//! The pages a tray menu can open are started while the user is still reading it (Linux).
//!
//! The window and the popover are created when opened and destroyed when closed (see `window`):
//! no webview while nothing is open. Creating one starts a WebKit web process, and most of the
//! ~250 ms from a click to the first painted frame is that process starting (its dynamic
//! loader, the EGL display WebKit opens in each one; README "At rest" → Opening). The tray host
//! says when the user opens the menu, over D-Bus, a few hundred milliseconds before a choice:
//! dbusmenu's `AboutToShow` on the root item (KDE, GNOME's AppIndicator extension, waybar) or an
//! `opened` event. The app then creates the window and the popover hidden, so the one chosen
//! is shown already loaded, and destroys what is still hidden once the menu has closed (a
//! `closed` event, [`CLOSED_GRACE`] later, for a click that follows it) or, for a host that never
//! says, [`OPENED_TTL`] after the last opening. Hosts that draw the menu in the app (an XEmbed
//! tray) send none of this: their clicks open the pages as before.
//!
//! The menu itself is libdbusmenu's, exported on the process's shared session-bus connection;
//! the app sees the calls to it through a filter on that connection (it reads them, and passes
//! every message on untouched).

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(target_os = "linux")]
use tauri::Manager;
use tauri::{AppHandle, Runtime};

/// How long after the menu's `closed` the unchosen pages stay: a host may report the click on an
/// item after the menu has closed.
pub const CLOSED_GRACE: Duration = Duration::from_millis(1500);
/// How long pages started for a menu stay hidden when the host never says the menu closed.
pub const OPENED_TTL: Duration = Duration::from_secs(10);

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

/// The latest menu opening: a cleanup scheduled for an earlier one does nothing.
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
pub struct MenuGeneration(AtomicU64);

/// Starts watching the session bus for the tray menu's opening and closing. Call it on the main
/// thread once the tray exists. Without a session bus it does nothing.
#[cfg(target_os = "linux")]
pub fn watch<R: Runtime>(app: &AppHandle<R>) {
    use gtk::gio;
    let connection = match gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE) {
        Ok(connection) => connection,
        Err(error) => {
            tracing::debug!(%error, "no session bus: the tray menu's opening is not watched");
            return;
        }
    };
    app.manage(MenuGeneration::default());
    let app = app.clone();
    // Runs on GDBus's worker thread for every message of the connection: it only reads, and
    // hands the rest to the main thread.
    connection.add_filter(move |_, message, incoming| {
        if incoming {
            if let Some(signal) = signal_of(message) {
                let handle = app.clone();
                let _ = app.run_on_main_thread(move || on_signal(&handle, signal));
            }
        }
        Some(message.clone())
    });
}

#[cfg(not(target_os = "linux"))]
pub fn watch<R: Runtime>(_app: &AppHandle<R>) {}

/// The menu signal a D-Bus message carries, if it is a dbusmenu call about the whole menu.
#[cfg(target_os = "linux")]
fn signal_of(message: &gtk::gio::DBusMessage) -> Option<MenuSignal> {
    use gtk::gio;
    if message.message_type() != gio::DBusMessageType::MethodCall
        || message.interface().as_deref() != Some("com.canonical.dbusmenu")
    {
        return None;
    }
    let member = message.member()?;
    let body = message.body()?;
    let first = (body.n_children() > 0).then(|| body.child_value(0))?;
    let (ids, events): (Vec<i32>, Vec<String>) = match member.as_str() {
        // (i) and (ai)
        "AboutToShow" => (vec![first.get::<i32>()?], Vec::new()),
        "AboutToShowGroup" => (first.get::<Vec<i32>>()?, Vec::new()),
        // (isvu) and (a(isvu))
        "Event" => {
            let event = body.child_value(1).get::<String>()?;
            (vec![first.get::<i32>()?], vec![event])
        }
        "EventGroup" => (0..first.n_children())
            .filter_map(|i| {
                let entry = first.child_value(i);
                Some((
                    entry.child_value(0).get::<i32>()?,
                    entry.child_value(1).get::<String>()?,
                ))
            })
            .unzip(),
        _ => return None,
    };
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    classify(&member, &ids, &events)
}

/// On the main thread: start what the menu can open, or schedule the cleanup.
#[cfg(target_os = "linux")]
fn on_signal<R: Runtime>(app: &AppHandle<R>, signal: MenuSignal) {
    let Some(generation) = app.try_state::<MenuGeneration>() else {
        return;
    };
    match signal {
        MenuSignal::Opening => {
            let current = generation.0.fetch_add(1, Ordering::SeqCst) + 1;
            crate::window::prewarm(app);
            crate::popover::prewarm(app);
            schedule_cleanup(app, OPENED_TTL, current);
        }
        MenuSignal::Closed => {
            let current = generation.0.load(Ordering::SeqCst);
            schedule_cleanup(app, CLOSED_GRACE, current);
        }
    }
}

/// After `delay`, unless the menu opened again meanwhile, destroys the pages still hidden.
#[cfg(target_os = "linux")]
fn schedule_cleanup<R: Runtime>(app: &AppHandle<R>, delay: Duration, generation: u64) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(delay).await;
        let handle = app.clone();
        let _ = app.run_on_main_thread(move || {
            let latest = handle
                .try_state::<MenuGeneration>()
                .map(|g| g.0.load(Ordering::SeqCst));
            if latest == Some(generation) {
                crate::window::drop_if_hidden(&handle);
                crate::popover::drop_if_hidden(&handle);
            }
        });
    });
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
