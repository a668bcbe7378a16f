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
//! says, [`OPENED_TTL`] after the last opening.
//!
//! Two ways to see the menu open, one per kind of tray host:
//! - a StatusNotifierItem host draws the menu itself from libdbusmenu's export on the process's
//!   shared session-bus connection; the app sees the host's calls through a filter on that
//!   connection (it reads them, and passes every message on untouched);
//! - an XEmbed tray (i3bar, polybar, trayer, stalonetray…) has no menu of its own: the app
//!   indicator falls back to a GtkStatusIcon and pops the GtkMenu up in this process. The app sees
//!   that menu mapped and unmapped (on screen and off; it is `show`n as soon as it is built)
//!   through emission hooks on GtkWidget's `map` and `unmap`, kept to menus attached to no widget
//!   (the tray's; a page's context menu is attached to its webview). Hooks rather than handlers
//!   on the menu: the tray replaces its GtkMenu whenever sessions come or go, and a hook sees
//!   every one of them.

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

pub use agent_tray::shell_policy::tray_menu::{classify, classify_widget, MenuSignal};

/// The latest menu opening: a cleanup scheduled for an earlier one does nothing.
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
pub struct MenuGeneration(AtomicU64);

/// Starts watching for the tray menu's opening and closing: drawn by the host (the session
/// bus) or in this process (GTK). Call it on the main thread once the tray exists.
#[cfg(target_os = "linux")]
pub fn watch<R: Runtime>(app: &AppHandle<R>) {
    app.manage(MenuGeneration::default());
    watch_in_process_menu(app);
    watch_session_bus(app);
}

#[cfg(target_os = "linux")]
fn watch_session_bus<R: Runtime>(app: &AppHandle<R>) {
    use gtk::gio;
    let connection = match gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE) {
        Ok(connection) => connection,
        Err(error) => {
            tracing::debug!(%error, "no session bus: the tray menu's opening is not watched");
            return;
        }
    };
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

/// What an emission hook calls with the signal it saw: hands it to the main loop's next turn, so
/// no window is created inside the menu's own `map`.
#[cfg(target_os = "linux")]
type WidgetSignalSink = Box<dyn Fn(MenuSignal) + 'static>;

/// Adds the `map` and `unmap` emission hooks (see the module comment). GTK calls them on the
/// main thread, for every widget mapped or unmapped; each reads the widget's type and returns.
#[cfg(target_os = "linux")]
fn watch_in_process_menu<R: Runtime>(app: &AppHandle<R>) {
    use gtk::glib::gobject_ffi;
    use gtk::glib::translate::IntoGlib;
    use gtk::glib::StaticType;

    let widget_type = gtk::Widget::static_type().into_glib();
    for (name, c_name) in [("map", c"map"), ("unmap", c"unmap")] {
        let app = app.clone();
        let sink: WidgetSignalSink = Box::new(move |signal| {
            let handle = app.clone();
            let _ = app.run_on_main_thread(move || on_signal(&handle, signal));
        });
        // SAFETY: GtkWidget's type is registered (gtk is initialised before the tray exists);
        // the hook's data is a leaked-until-destroy Box<WidgetSignalSink> that only the hook
        // reads and only the destroy notify frees.
        unsafe {
            let signal_id = gobject_ffi::g_signal_lookup(c_name.as_ptr(), widget_type);
            if signal_id == 0 {
                tracing::debug!(signal = name, "GtkWidget has no such signal: not watched");
                continue;
            }
            let data = Box::into_raw(Box::new((name, sink)));
            gobject_ffi::g_signal_add_emission_hook(
                signal_id,
                0,
                Some(widget_signal_hook),
                data.cast(),
                Some(drop_widget_signal_sink),
            );
        }
    }
}

/// The emission hook: passes the tray menu's `map`/`unmap` on, and stays installed (TRUE).
#[cfg(target_os = "linux")]
unsafe extern "C" fn widget_signal_hook(
    _hint: *mut gtk::glib::gobject_ffi::GSignalInvocationHint,
    n_params: std::ffi::c_uint,
    params: *const gtk::glib::gobject_ffi::GValue,
    data: gtk::glib::ffi::gpointer,
) -> gtk::glib::ffi::gboolean {
    use gtk::glib::gobject_ffi;
    use gtk::glib::translate::FromGlibPtrBorrow;
    use gtk::prelude::*;

    if n_params == 0 || params.is_null() || data.is_null() {
        return gtk::glib::ffi::GTRUE;
    }
    // SAFETY: GTK passes the emitting instance as the first parameter, a GObject value, alive
    // for the emission; `data` is the Box this module leaked for the hook.
    let object = unsafe { gobject_ffi::g_value_get_object(params) };
    if object.is_null() {
        return gtk::glib::ffi::GTRUE;
    }
    let object = unsafe { gtk::glib::Object::from_glib_borrow(object) };
    let (name, sink) = unsafe { &*(data as *const (&str, WidgetSignalSink)) };
    let menu = object.downcast_ref::<gtk::Menu>();
    let attached = menu.is_some_and(|m| m.attach_widget().is_some());
    if let Some(signal) = classify_widget(name, menu.is_some(), attached) {
        sink(signal);
    }
    gtk::glib::ffi::GTRUE
}

#[cfg(target_os = "linux")]
unsafe extern "C" fn drop_widget_signal_sink(data: gtk::glib::ffi::gpointer) {
    // SAFETY: the Box leaked by `watch_in_process_menu`, freed once, when GLib drops the hook.
    drop(unsafe { Box::from_raw(data as *mut (&str, WidgetSignalSink)) });
}

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
    tracing::debug!(?signal, "the tray menu");
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
