//! Renders the tray from a snapshot of sessions: icon, tooltip, menu.
//!
//! The model (aggregate state, rows, whether the menu must be rebuilt) is the core's
//! [`agent_tray::tray_model`]; this module only applies it. The menu is rebuilt only when sessions
//! come or go, and otherwise relabelled in place, because replacing a menu closes it under the
//! user's pointer (and on Linux re-exports it over D-Bus). Rows are addressed by position
//! (`session:<n>`), with the position → session map kept beside the items, so a reorder (a session
//! moving to "needs you") is a relabel too.
//!
//! On Linux a click on the icon only ever opens the menu, so everything the app offers is in the
//! menu: open the window, install hooks, settings, logs, quit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tray::tray_model::{plan_menu_update, MenuRow, MenuUpdate, TrayModel, TrayStatus};
use tauri::image::Image;
use tauri::menu::{Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio_util::sync::CancellationToken;

use crate::ipc::{EVENT_INSTALL_RESULT, EVENT_OPEN_SETTINGS};
use crate::sessions::SessionsSource;
use crate::settings::SettingsStore;

pub const TRAY_ID: &str = "main";
/// Labels show minutes; refreshing this often keeps "time in state" current without a change.
const REFRESH: Duration = Duration::from_secs(20);
/// Changes arriving together (a hook burst) are rendered once.
const SETTLE: Duration = Duration::from_millis(100);

/// The tray's current menu: row items by position and which session each shows.
pub struct TrayMenu<R: Runtime> {
    rows: Vec<MenuRow>,
    items: Vec<MenuItem<R>>,
    status: Option<TrayStatus>,
    title: Option<String>,
}

pub type TrayMenuState<R> = Mutex<TrayMenu<R>>;

fn icon_bytes(status: TrayStatus) -> &'static [u8] {
    #[cfg(target_os = "macos")]
    {
        match status {
            TrayStatus::None => include_bytes!("../../icons/tray/template/none@2x.png"),
            TrayStatus::AllIdle => include_bytes!("../../icons/tray/template/idle@2x.png"),
            TrayStatus::Working => include_bytes!("../../icons/tray/template/working@2x.png"),
            TrayStatus::NeedsYou => include_bytes!("../../icons/tray/template/needs-you@2x.png"),
        }
    }
    #[cfg(not(target_os = "macos"))]
    {
        match status {
            TrayStatus::None => include_bytes!("../../icons/tray/none.png"),
            TrayStatus::AllIdle => include_bytes!("../../icons/tray/idle.png"),
            TrayStatus::Working => include_bytes!("../../icons/tray/working.png"),
            TrayStatus::NeedsYou => include_bytes!("../../icons/tray/needs-you.png"),
        }
    }
}

/// muda reads `&` as a mnemonic marker; session text must show it literally.
fn menu_text(label: &str) -> String {
    label.replace('&', "&&")
}

/// Creates the tray icon with an empty menu. Call once, in setup.
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let (menu, _) = build_menu(app, &[])?;
    let icon = Image::from_bytes(icon_bytes(TrayStatus::None))?;
    let builder = TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon)
        .tooltip(TrayStatus::None.describe())
        .menu(&menu)
        .on_menu_event(on_menu_event);
    #[cfg(target_os = "macos")]
    let builder = builder
        .icon_as_template(true)
        .show_menu_on_left_click(false)
        .on_tray_icon_event(crate::window::on_macos_tray_event);
    builder.build(app)?;
    app.manage::<TrayMenuState<R>>(Mutex::new(TrayMenu {
        rows: Vec::new(),
        items: Vec::new(),
        status: Some(TrayStatus::None),
        title: None,
    }));
    Ok(())
}

fn build_menu<R: Runtime>(
    app: &AppHandle<R>,
    rows: &[MenuRow],
) -> tauri::Result<(Menu<R>, Vec<MenuItem<R>>)> {
    let menu = Menu::new(app)?;
    let mut items = Vec::with_capacity(rows.len());
    if rows.is_empty() {
        let empty = MenuItem::with_id(app, "empty", "No sessions yet", false, None::<&str>)?;
        menu.append(&empty)?;
    }
    for (i, row) in rows.iter().enumerate() {
        let item = MenuItem::with_id(
            app,
            format!("session:{i}"),
            menu_text(&row.label),
            true,
            None::<&str>,
        )?;
        menu.append(&item)?;
        items.push(item);
    }
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    for (id, text) in [
        ("open", "Open Agent Tray"),
        ("install", "Install hooks…"),
        ("settings", "Settings"),
        ("logs", "Reveal logs"),
    ] {
        menu.append(&MenuItem::with_id(app, id, text, true, None::<&str>)?)?;
    }
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    menu.append(&MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?)?;
    Ok((menu, items))
}

/// Brings the tray up to date with the registry.
pub fn render<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    let settings = app.state::<SettingsStore>().get();
    let sessions = app.state::<Arc<SessionsSource>>().live(&settings);
    let model = TrayModel::build(&sessions, chrono::Utc::now());
    let state = app.state::<TrayMenuState<R>>();
    let mut menu = state.lock().unwrap_or_else(|p| p.into_inner());
    apply(app, &tray, &mut menu, model, settings.menu_bar_counts)
}

fn apply<R: Runtime>(
    app: &AppHandle<R>,
    tray: &TrayIcon<R>,
    menu: &mut TrayMenu<R>,
    model: TrayModel,
    show_counts: bool,
) -> tauri::Result<()> {
    if menu.status != Some(model.status) {
        tray.set_icon(Some(Image::from_bytes(icon_bytes(model.status))?))?;
        #[cfg(target_os = "macos")]
        tray.set_icon_as_template(true)?;
        tray.set_tooltip(Some(model.status.describe()))?;
        tracing::info!(status = ?model.status, "tray_status");
        menu.status = Some(model.status);
    }
    let title = if show_counts {
        model.counts.title()
    } else {
        String::new()
    };
    if menu.title.as_deref() != Some(title.as_str()) {
        // Only macOS shows a title beside the icon; elsewhere this is a no-op.
        tray.set_title(Some(title.as_str()))?;
        menu.title = Some(title);
    }
    match plan_menu_update(&menu.rows, &model.rows) {
        MenuUpdate::Unchanged => {}
        MenuUpdate::Relabel => {
            for (item, row) in menu.items.iter().zip(&model.rows) {
                item.set_text(menu_text(&row.label))?;
            }
            menu.rows = model.rows;
        }
        MenuUpdate::Rebuild => {
            let (new_menu, items) = build_menu(app, &model.rows)?;
            tray.set_menu(Some(new_menu))?;
            tracing::debug!(rows = model.rows.len(), "tray menu rebuilt");
            menu.items = items;
            menu.rows = model.rows;
        }
    }
    Ok(())
}

/// Re-renders on every change (settled) and every [`REFRESH`].
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let app = app.clone();
    let mut changes = app.state::<Arc<SessionsSource>>().registry().subscribe();
    let mut settings = app.state::<SettingsStore>().subscribe();
    tauri::async_runtime::spawn(async move {
        let mut ticks = tokio::time::interval(REFRESH);
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                _ = ticks.tick() => {}
                Ok(()) = settings.changed() => { settings.borrow_and_update(); }
                change = changes.recv() => {
                    if matches!(change, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        break;
                    }
                    tokio::time::sleep(SETTLE).await;
                    // Everything queued meanwhile is covered by the snapshot taken next.
                    while changes.try_recv().is_ok() {}
                }
            }
            if let Err(error) = render(&app) {
                tracing::warn!(%error, "cannot update the tray");
            }
        }
    });
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    let id = event.id().as_ref();
    match id {
        "open" => crate::window::show(app),
        "settings" => {
            crate::window::show(app);
            let _ = app.emit(EVENT_OPEN_SETTINGS, ());
        }
        "install" => {
            let app = app.clone();
            tauri::async_runtime::spawn_blocking(move || {
                let report = crate::actions::install_hooks();
                crate::window::show(&app);
                let _ = app.emit(EVENT_INSTALL_RESULT, report);
            });
        }
        "logs" => {
            if let Err(error) = crate::actions::reveal_logs(app) {
                tracing::warn!(%error, "cannot reveal the logs");
            }
        }
        "quit" => app.exit(0),
        other => {
            let Some(index) = other
                .strip_prefix("session:")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                return;
            };
            let state = app.state::<TrayMenuState<R>>();
            let session_id = {
                let menu = state.lock().unwrap_or_else(|p| p.into_inner());
                menu.rows.get(index).map(|r| r.session_id.clone())
            };
            if let Some(session_id) = session_id {
                tracing::info!(%session_id, "session chosen from the tray");
                crate::window::focus_session(app, session_id);
            }
        }
    }
}
