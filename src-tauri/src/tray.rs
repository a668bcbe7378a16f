//! Renders the tray from a snapshot of sessions: icon, tooltip, menu.
//!
//! The model (aggregate state, rows, whether the menu must be rebuilt) is the core's
//! [`agent_tray::tray_model`]; this module only applies it. The menu is rebuilt only when sessions
//! come or go, and otherwise relabelled in place, because replacing a menu closes it under the
//! user's pointer (and on Linux re-exports it over D-Bus). Rows are addressed by position
//! (`session:<n>`), with the position → session map kept beside the items, so a reorder (a session
//! moving to "needs you") is a relabel too, and a relabel sets only the items whose text changed.
//! The model caps the rows (each item is a round trip to the main thread, which also delivers
//! the window's events); a "+N more" item then opens the window.
//!
//! On Linux a click on the icon only ever opens the menu, so everything the app offers is in the
//! menu: open the window, install hooks, settings, logs, quit. On macOS and Windows a left click
//! opens the popover (see `popover`) and a right click the menu.
//!
//! No lock is held across a Tauri call. Every tray and menu call runs on the main thread and the
//! caller waits for it, and the menu's click handler runs on the main thread: a render that held
//! a lock the click handler wants, while waiting for the main thread, would freeze the app for
//! good. So the renderer's state ([`TrayMenu`]) belongs to the one task that renders and is not
//! shared at all, and the click handler reads a copy of the rows ([`MenuRows`]) published after
//! each render, under a lock held only to swap or read a list.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tray::answering::{Answer, RequestId};
use agent_tray::model::SessionKey;
use agent_tray::tray_model::{
    menu_answer_action, plan_menu_update_with_more, until_next_midnight, MenuAnswerAction, MenuRow,
    MenuTime, MenuUpdate, TrayModel, TrayStatus,
};
use tauri::image::Image;
use tauri::menu::{Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Runtime};
use tokio_util::sync::CancellationToken;

use crate::sessions::SessionsSource;
use crate::settings::SettingsStore;

pub const TRAY_ID: &str = "main";
/// Changes arriving together (a hook burst) are rendered once.
const SETTLE: Duration = Duration::from_millis(100);

/// What the renderer keeps between renders: the rows by position, their items, what the icon
/// and title show. Owned by the task that renders, never shared.
pub struct TrayMenu<R: Runtime> {
    rows: Vec<MenuRow>,
    items: Vec<MenuItem<R>>,
    /// Sessions the capped menu leaves out, and the "+N more" item that says so.
    more: usize,
    more_item: Option<MenuItem<R>>,
    status: Option<TrayStatus>,
    title: Option<String>,
    /// The status lines the menu shows ([`status_lines`]); a change rebuilds it.
    status_lines: Vec<(String, String)>,
}

impl<R: Runtime> TrayMenu<R> {
    /// The state of the menu [`create`] builds: no rows, the "none" icon.
    pub fn new() -> Self {
        TrayMenu {
            rows: Vec::new(),
            items: Vec::new(),
            more: 0,
            more_item: None,
            status: Some(TrayStatus::None),
            title: None,
            status_lines: Vec::new(),
        }
    }
}

impl<R: Runtime> Default for TrayMenu<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// The session behind each row position, as the menu on screen shows it: what a click on
/// `session:<n>` opens. Items are named by position, never by session id (ids are chosen by
/// whoever reports the session, a remote included), and each position keeps its session's host
/// and id. Replaced after every render; the lock is held only to swap or read.
#[derive(Default)]
pub struct MenuRows(Mutex<Vec<(SessionKey, Option<RequestId>)>>);

impl MenuRows {
    fn publish(&self, rows: &[MenuRow]) {
        let ids = rows
            .iter()
            .map(|r| {
                let request = r.answers.as_ref().map(|a| a.request.clone());
                (r.key(), request)
            })
            .collect();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = ids;
    }

    fn session_at(&self, index: usize) -> Option<SessionKey> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(index)
            .map(|(id, _)| id.clone())
    }

    /// The session whose row holds `request` in the menu on screen.
    fn session_with(&self, request: &RequestId) -> Option<SessionKey> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(_, r)| r.as_ref() == Some(request))
            .map(|(key, _)| key.clone())
    }
}

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
    let (menu, _) = build_menu(app, &[], None)?;
    let icon = Image::from_bytes(icon_bytes(TrayStatus::None))?;
    let builder = TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon)
        .tooltip(TrayStatus::None.describe())
        .menu(&menu)
        .on_menu_event(on_menu_event);
    let builder = builder.on_tray_icon_event(on_tray_icon_event);
    #[cfg(target_os = "macos")]
    let builder = builder
        .icon_as_template(true)
        .show_menu_on_left_click(false);
    // Windows: the menu on a right click only, as the taskbar's other icons do; a left click
    // is the popover's.
    #[cfg(windows)]
    let builder = builder.show_menu_on_left_click(false);
    builder.build(app)?;
    manage_menu(app);
    Ok(())
}

/// The id of the menu's "Waiting on you today" line (read from the store as the menu is built).
pub const WAITING_TODAY_ID: &str = "waiting-today";

/// The ids of the menu's plan-limit lines ([`status_lines`]).
pub const LIMIT_ID_PREFIX: &str = "limit:";

/// The id of the menu's "+N more — Open Agent Tray" line ([`TrayModel::more_line`]).
pub const MORE_ID: &str = "more";

/// The items of a built menu that a later render relabels in place.
pub type MenuItems<R> = (Vec<MenuItem<R>>, Option<MenuItem<R>>);

/// Builds the whole menu: the session rows (capped by the model), the `more` line when the cap
/// left sessions out, today's "waiting on you" line, then the app's items.
pub fn build_menu<R: Runtime>(
    app: &AppHandle<R>,
    rows: &[MenuRow],
    more: Option<&str>,
) -> tauri::Result<(Menu<R>, MenuItems<R>)> {
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
        // A request the menu can answer: its own items under its row, each naming the request
        // by its id (captured now, never a position resolved later).
        if let Some(answer) = &row.answers {
            for item in &answer.items {
                let label = format!("    {}", item.label);
                menu.append(&MenuItem::with_id(
                    app,
                    item.id.as_str(),
                    menu_text(&label),
                    true,
                    None::<&str>,
                )?)?;
            }
        }
    }
    let more_item = match more {
        Some(text) => {
            let item = MenuItem::with_id(app, MORE_ID, menu_text(text), true, None::<&str>)?;
            menu.append(&item)?;
            Some(item)
        }
        None => None,
    };
    menu.append(&PredefinedMenuItem::separator(app)?)?;
    let waiting = crate::history::waiting_today_line(app);
    menu.append(&MenuItem::with_id(
        app,
        WAITING_TODAY_ID,
        menu_text(&waiting),
        false,
        None::<&str>,
    )?)?;
    for (id, text) in status_lines(app) {
        menu.append(&MenuItem::with_id(app, id, text, true, None::<&str>)?)?;
    }
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
    Ok((menu, (items, more_item)))
}

/// The menu's status lines: one per agent whose recorded hooks drifted (none before the engine's
/// watch is managed; the watch's value is copied out before any menu call), then one per plan
/// window the agents reported ([`crate::limits`]); a click opens the
/// window, whose Today view says more.
pub fn status_lines<R: Runtime>(app: &AppHandle<R>) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String)> = app
        .try_state::<crate::hook_drift::DriftWatch>()
        .map(|w| crate::hook_drift::tray_lines(&w.health.borrow()))
        .unwrap_or_default();
    let now = chrono::Utc::now();
    lines.extend(
        crate::limits::current(app)
            .iter()
            .enumerate()
            .map(|(i, w)| {
                (
                    format!("{LIMIT_ID_PREFIX}{i}"),
                    menu_text(&agent_tray::tray_model::limit_line(w, now)),
                )
            }),
    );
    lines
}

/// What the renderer changes on the tray icon itself. The app's is the [`TrayIcon`]; each call
/// round-trips to the main thread (Tauri runs tray calls there and waits for them).
pub trait TraySurface<R: Runtime> {
    fn set_status(&self, status: TrayStatus) -> tauri::Result<()>;
    fn set_title(&self, title: &str) -> tauri::Result<()>;
    fn set_menu(&self, menu: Menu<R>) -> tauri::Result<()>;
}

impl<R: Runtime> TraySurface<R> for TrayIcon<R> {
    fn set_status(&self, status: TrayStatus) -> tauri::Result<()> {
        self.set_icon(Some(Image::from_bytes(icon_bytes(status))?))?;
        #[cfg(target_os = "macos")]
        self.set_icon_as_template(true)?;
        self.set_tooltip(Some(status.describe()))
    }

    fn set_title(&self, title: &str) -> tauri::Result<()> {
        // Only macOS shows a title beside the icon; elsewhere this is a no-op.
        TrayIcon::set_title(self, Some(title))
    }

    fn set_menu(&self, menu: Menu<R>) -> tauri::Result<()> {
        TrayIcon::set_menu(self, Some(menu))
    }
}

/// Brings the tray up to date with the registry. `menu` is the caller's own (see the module
/// comment): only the render task calls this.
pub fn render<R: Runtime>(app: &AppHandle<R>, menu: &mut TrayMenu<R>) -> tauri::Result<()> {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    render_on(app, &tray, menu)
}

/// Brings `surface` and the menu up to date with the registry, then publishes the rows the
/// menu now shows for the click handler. Holds no lock while it calls Tauri.
pub fn render_on<R: Runtime>(
    app: &AppHandle<R>,
    surface: &impl TraySurface<R>,
    menu: &mut TrayMenu<R>,
) -> tauri::Result<()> {
    let settings = app.state::<SettingsStore>().get();
    let sessions = app.state::<Arc<SessionsSource>>().live(&settings);
    let model = TrayModel::build_with(&sessions, chrono::Utc::now(), menu_time());
    let applied = apply(app, surface, menu, model, settings.menu_bar_counts);
    if let Some(rows) = app.try_state::<MenuRows>() {
        rows.publish(&menu.rows);
    }
    applied
}

/// The row map the click handler reads; empty until the first render.
pub fn manage_menu<R: Runtime>(app: &AppHandle<R>) {
    app.manage(MenuRows::default());
}

fn apply<R: Runtime>(
    app: &AppHandle<R>,
    tray: &impl TraySurface<R>,
    menu: &mut TrayMenu<R>,
    model: TrayModel,
    show_counts: bool,
) -> tauri::Result<()> {
    if menu.status != Some(model.status) {
        tray.set_status(model.status)?;
        tracing::info!(status = ?model.status, "tray_status");
        menu.status = Some(model.status);
    }
    let title = if show_counts {
        model.counts.title()
    } else {
        String::new()
    };
    if menu.title.as_deref() != Some(title.as_str()) {
        tray.set_title(title.as_str())?;
        menu.title = Some(title);
    }
    let lines = status_lines(app);
    let more_line = model.more_line();
    let update = if lines == menu.status_lines {
        plan_menu_update_with_more(&menu.rows, menu.more, &model.rows, model.more)
    } else {
        MenuUpdate::Rebuild
    };
    menu.status_lines = lines;
    match update {
        MenuUpdate::Unchanged => {}
        MenuUpdate::Relabel => {
            for ((item, old), row) in menu.items.iter().zip(&menu.rows).zip(&model.rows) {
                if old.label != row.label {
                    item.set_text(menu_text(&row.label))?;
                }
            }
            if let (Some(item), Some(text)) = (&menu.more_item, &more_line) {
                if menu.more != model.more {
                    item.set_text(menu_text(text))?;
                }
            }
            menu.rows = model.rows;
            menu.more = model.more;
        }
        MenuUpdate::Rebuild => {
            let (new_menu, (items, more_item)) =
                build_menu(app, &model.rows, more_line.as_deref())?;
            tray.set_menu(new_menu)?;
            tracing::debug!(rows = model.rows.len(), "tray menu rebuilt");
            menu.items = items;
            menu.more_item = more_item;
            menu.rows = model.rows;
            menu.more = model.more;
        }
    }
    Ok(())
}

pub use crate::menu_opening::MenuOpening;

/// How rows say their time: "3m in state" where the menu's opening is reported (the renderer
/// runs then, so the minutes are current when read); a clock time ("since 14:02") on Linux,
/// whose tray hosts open the menu over D-Bus without telling the app: a clock time needs no
/// minute clock to stay true, so the menu changes only when sessions do.
fn menu_time() -> MenuTime {
    if OPENING_REPORTED {
        MenuTime::Elapsed
    } else {
        MenuTime::ClockTime(agent_tray::store::waiting::user_time_zone())
    }
}

/// How long labels may go without a render when nothing changes: never where the menu's
/// opening is reported (it renders then); where it is not, until the next local midnight
/// (`until_midnight`), when today's clock times gain their date, and only while rows are shown.
pub fn label_refresh(
    rows_shown: bool,
    opening_reported: bool,
    until_midnight: Duration,
) -> Option<Duration> {
    (rows_shown && !opening_reported).then_some(until_midnight)
}

/// The real clock's time to the next local midnight, for [`render_loop`].
fn until_midnight_here() -> Duration {
    until_next_midnight(
        chrono::Utc::now(),
        agent_tray::store::waiting::user_time_zone(),
    )
}

/// Whether this platform's tray reports the menu opening (Tauri delivers no tray icon events
/// on Linux).
pub const OPENING_REPORTED: bool = !cfg!(target_os = "linux");

/// The renderer's loop, written against a `render` closure (true when the rendered menu shows
/// rows) so tests count its wakeups: a render at once, then on every change (settled), every
/// settings change, every menu opening, and [`label_refresh`] (`until_midnight` says when the
/// next local midnight is).
pub async fn render_loop(
    mut changes: tokio::sync::broadcast::Receiver<agent_tray::registry::SessionChange>,
    mut settings: tokio::sync::watch::Receiver<crate::ipc::AppSettings>,
    opening: Arc<MenuOpening>,
    opening_reported: bool,
    mut render: impl FnMut() -> bool,
    mut until_midnight: impl FnMut() -> Duration,
    token: CancellationToken,
) {
    let mut rows_shown = render();
    loop {
        // Made anew each turn and dropped when another branch wins: no timer stays armed.
        let refresh = async {
            match label_refresh(rows_shown, opening_reported, until_midnight()) {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = token.cancelled() => break,
            () = opening.notified() => {}
            () = refresh => {}
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
        rows_shown = render();
    }
}

/// Starts the renderer ([`render_loop`] on the real tray).
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let app = app.clone();
    let changes = app.state::<Arc<SessionsSource>>().registry().subscribe();
    let settings = app.state::<SettingsStore>().subscribe();
    let opening = match app.try_state::<Arc<MenuOpening>>() {
        Some(opening) => opening.inner().clone(),
        None => {
            let opening = Arc::new(MenuOpening::default());
            app.manage(opening.clone());
            opening
        }
    };
    tauri::async_runtime::spawn(async move {
        let mut menu = TrayMenu::new();
        let render_menu = || {
            if let Err(error) = render(&app, &mut menu) {
                tracing::warn!(%error, "cannot update the tray");
            }
            !menu.rows.is_empty()
        };
        render_loop(
            changes,
            settings,
            opening,
            OPENING_REPORTED,
            render_menu,
            until_midnight_here,
            token,
        )
        .await;
    });
}

/// A hover or click on the icon comes before the menu opens: the renderer refreshes its times.
fn on_tray_icon_event<R: Runtime>(tray: &TrayIcon<R>, event: tauri::tray::TrayIconEvent) {
    use tauri::tray::TrayIconEvent;
    if matches!(
        event,
        TrayIconEvent::Enter { .. } | TrayIconEvent::Click { .. }
    ) {
        if let Some(opening) = tray.app_handle().try_state::<Arc<MenuOpening>>() {
            opening.notify();
        }
    }
    crate::popover::on_tray_icon_event(tray.app_handle(), &event);
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    handle_menu_item(app, event.id().as_ref());
}

/// What a click on the menu item `id` does. Runs on the main thread.
pub fn handle_menu_item<R: Runtime>(app: &AppHandle<R>, id: &str) {
    match id {
        "open" => crate::popover::open(app),
        // The sessions the capped menu leaves out are all in the full window.
        MORE_ID => crate::window::show(app),
        other if other.starts_with(LIMIT_ID_PREFIX) => crate::window::show(app),
        "settings" => crate::window::open_settings(app),
        "install" => {
            let app = app.clone();
            tauri::async_runtime::spawn_blocking(move || {
                let report = crate::actions::install_hooks();
                crate::window::show_install_report(&app, report);
            });
        }
        "logs" => crate::actions::reveal_logs(app),
        "quit" => app.exit(0),
        other if crate::hook_drift::repair_target(other).is_some() => {
            let (Some(agent), Some(watch)) = (
                crate::hook_drift::repair_target(other),
                app.try_state::<crate::hook_drift::DriftWatch>(),
            ) else {
                return;
            };
            let data_dir = watch.data_dir.clone();
            // The same repair as the alert's button, off the main thread; the engine's watcher
            // sees the file change and the line goes.
            tauri::async_runtime::spawn_blocking(move || {
                crate::hook_drift::repair_now(&data_dir, agent)
            });
        }
        other if menu_answer_action(other).is_some() => {
            let (request, answer) = match menu_answer_action(other) {
                Some(MenuAnswerAction::Allow(id)) => (id, Answer::Allow),
                Some(MenuAnswerAction::Deny(id)) => (id, Answer::Deny { message: None }),
                Some(MenuAnswerAction::Open(id)) => {
                    let session = app
                        .try_state::<MenuRows>()
                        .and_then(|rows| rows.session_with(&id));
                    match session {
                        Some(session) => crate::window::focus_session(app, session),
                        None => crate::window::show(app),
                    }
                    return;
                }
                None => return,
            };
            let Some(source) = app.try_state::<Arc<crate::sessions::SessionsSource>>() else {
                return;
            };
            let registry = source.registry().clone();
            tracing::info!(%request, "request answered from the tray menu");
            tauri::async_runtime::spawn(async move {
                let source = agent_tray::answering::AnswerSource::TrayMenu;
                let named = request.as_str();
                if let Err(error) = registry.answer_routed(named, None, answer, source).await {
                    tracing::warn!(%request, %error, "the tray menu's answer did not reach the agent");
                }
            });
        }
        other => {
            let Some(index) = other
                .strip_prefix("session:")
                .and_then(|n| n.parse::<usize>().ok())
            else {
                return;
            };
            let session = app
                .try_state::<MenuRows>()
                .and_then(|rows| rows.session_at(index));
            if let Some(session) = session {
                tracing::info!(session_id = %session.session_id, host = ?session.host, "session chosen from the tray");
                crate::window::focus_session(app, session);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod render_loop_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// What [`start`] hands a test: the render count, the menu-opening flag, the registry, the
    /// loop's token and task, and the settings sender.
    type Started = (
        Arc<AtomicUsize>,
        Arc<MenuOpening>,
        Arc<agent_tray::registry::SessionsRegistry>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
        tokio::sync::watch::Sender<crate::ipc::AppSettings>,
    );

    /// The renderer with `rows` shown, counting its renders (every wakeup renders once).
    fn start(opening_reported: bool) -> Started {
        let registry = Arc::new(agent_tray::registry::SessionsRegistry::new());
        let (settings_tx, settings) = tokio::sync::watch::channel(Default::default());
        let renders = Arc::new(AtomicUsize::new(0));
        let counted = renders.clone();
        let opening = Arc::new(MenuOpening::default());
        let token = CancellationToken::new();
        let task = tokio::spawn(render_loop(
            registry.subscribe(),
            settings,
            opening.clone(),
            opening_reported,
            move || {
                counted.fetch_add(1, SeqCst);
                true
            },
            // The local midnight is ten hours away whenever asked: the tests run within an hour.
            || Duration::from_secs(10 * 3600),
            token.clone(),
        ));
        (renders, opening, registry, token, task, settings_tx)
    }

    #[tokio::test(start_paused = true)]
    async fn where_the_menu_opening_is_reported_the_tray_renders_then_and_never_on_a_clock() {
        // macOS and Windows: an hour with sessions listed and nothing happening costs nothing;
        // the menu about to open renders once (the positive control).
        let (renders, opening, _registry, token, task, _settings) = start(true);
        settle().await;
        assert_eq!(renders.load(SeqCst), 1, "the first render, at once");
        tokio::time::sleep(Duration::from_secs(3600)).await;
        settle().await;
        assert_eq!(renders.load(SeqCst), 1, "rendered on a clock");
        opening.notify();
        settle().await;
        assert_eq!(
            renders.load(SeqCst),
            2,
            "the opening menu was not refreshed"
        );
        token.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn where_it_is_not_reported_the_menu_changes_only_with_sessions_and_at_midnight() {
        // Linux: the tray host opens the menu without telling the app, so rows say clock times
        // ("since 14:02") that stay true with no render: an hour of sessions listed and nothing
        // happening renders nothing (it rendered every minute before), a session change does
        // (the positive control), and so does the local midnight, when times gain their date.
        let (renders, _opening, registry, token, task, _settings) = start(false);
        settle().await;
        assert_eq!(renders.load(SeqCst), 1, "the first render, at once");
        tokio::time::sleep(Duration::from_secs(3600)).await;
        settle().await;
        assert_eq!(
            renders.load(SeqCst),
            1,
            "rendered on a clock with no change"
        );
        registry
            .observe(agent_tray::model::Observation::new(
                "s1",
                agent_tray::model::Agent::Claude,
                agent_tray::model::EventKind::SessionStart,
                chrono::Utc::now(),
            ))
            .unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        settle().await;
        assert_eq!(renders.load(SeqCst), 2, "a session change was not rendered");
        tokio::time::sleep(Duration::from_secs(10 * 3600 + 1)).await;
        settle().await;
        assert_eq!(renders.load(SeqCst), 3, "the midnight render never came");
        assert_eq!(
            label_refresh(false, false, Duration::from_secs(5)),
            None,
            "no rows, no clock"
        );
        token.cancel();
        task.await.unwrap();
    }
}
