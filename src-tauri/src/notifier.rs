//! Executes the notification policy's decisions as desktop alerts (notify-rust).
//!
//! The decision is the core's ([`agent_tray::notify_policy`]); this module only feeds it the
//! registry's changes and shows what it returns. Showing happens on one dedicated thread behind a
//! small bounded queue: a D-Bus call to a slow or absent notification server must never delay the
//! registry, the tray or the window. With no notification server at all, the failure is logged
//! once and the app carries on.
//!
//! Clicks: on Linux each alert carries the `default` action (a click on its body); a server that
//! reports clicks sends `ActionInvoked`, which [`click_target`] maps to the session to show, and
//! the shell shows the window on it. Linux alerts go over the session bus through
//! [`crate::alert_bus`], not notify-rust's handle, which hears `ActionInvoked` from any program:
//! a choice counts only from the server that showed the alert. Waiting for that answer blocks until the
//! alert is clicked or closed, so it happens on a short-lived waiter thread per alert, never on
//! the alert thread (which must stay free for the next alert). Waiters are capped
//! ([`MAX_WAITERS`]): a server that never closes its alerts cannot pile threads up; past the cap
//! an alert is still shown, only its click is not followed. Where the platform reports no clicks
//! (macOS, for an alert that asks nothing: a click only brings the app forward; or a server
//! without actions), nothing waits and nothing breaks.
//!
//! On macOS an alert about a permission request carries the request's answers as its own
//! buttons (an "Answer" menu with Allow and Deny, through mac-notification-sys, the library
//! notify-rust itself uses there): its waiter blocks on the user's choice like Linux's, and the
//! choice is read back by [`mac_choice`], which is pure and tested on every platform. macOS gives
//! no handle to withdraw such an alert: answered elsewhere first, its button is refused by the
//! engine's book (already answered) and nothing reaches the agent twice.
//!
//! On Windows an alert is a toast, shown under the app's AppUserModelID ([`APP_USER_MODEL_ID`],
//! the bundle identifier, which the NSIS installer gives the Start-menu shortcut: Windows shows
//! a toast only for an id some shortcut carries, and names the app from it). A toast asks
//! nothing: a request's alert carries no Allow or Deny there, and the window and the tray menu
//! answer it. notify-rust can put buttons on a toast, but their choice comes back only through
//! a callback into this process while the toast is on screen, and a toast cannot be withdrawn
//! once its request is answered elsewhere; the window shows the request whole anyway. Nothing
//! waits on a toast.
//!
//! Reply: the alert that a turn finished carries a "Reply" button when the session takes a
//! prompt now (the core's `can_send`, asked as the alert is shown). Where the server takes typed
//! replies itself (the `inline-reply` capability, KDE's extension) the button is its
//! `inline-reply` action and the text comes back as `NotificationReplied`: it is sent to the
//! session at once ([`OnReply`]), and a refusal is said in an alert of its own. Elsewhere the
//! button opens the window with that session's reply field focused. A remote's session is never
//! offered one (its prompt is sent over ssh, from the CLI).
//!
//! Bodies are text, never markup: a server that lists the `body-markup` capability (dunst,
//! GNOME, KDE) parses `<b>`, `<img>`, `<a href>` and entities in the body, so a folder named
//! `<img src=x onerror=alert(1)>` would be shown as an image. [`body_for_server`] escapes `&`,
//! `<` and `>` for such a server (asked per alert: the server may be replaced at run time) and
//! leaves the body alone for one that shows it as plain text. The summary is plain text by the
//! specification, on every server.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use agent_tray::answering::{Answer, RequestId};
use agent_tray::model::SessionKey;
use agent_tray::notify_policy::{Alert, AlertAction, NotifyPolicy};
use agent_tray::registry::SessionChange;
use tauri::{AppHandle, Manager, Runtime};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::ipc::AppSettings;
use crate::terminal_focus::{TerminalFocus, TmuxFocus};

/// Alerts waiting to be shown. A burst larger than this (dozens of sessions dying at once) is
/// not worth a wall of popups: the extra alerts are dropped with a log line.
const QUEUE: usize = 16;
/// Alerts whose click is awaited at once (one thread each, ending when the alert is clicked or
/// closed).
pub const MAX_WAITERS: usize = 8;
/// The action of a click on the alert's body (XDG's reserved name).
pub const ACTION_DEFAULT: &str = "default";

/// The app's AppUserModelID on Windows: the bundle identifier in `tauri.conf.json`, which the
/// NSIS installer sets on the Start-menu shortcut. A toast shown under another id is dropped
/// (or shown as PowerShell's, notify-rust's default).
pub const APP_USER_MODEL_ID: &str = "dev.agenttray.desktop";

/// What a click on an alert opens: the session (host and id), or None for anything else the
/// server reports (the alert closed, expired, or an action we did not offer).
pub fn click_target(action: &str, alert: &Alert) -> Option<SessionKey> {
    match alert.action(action) {
        AlertAction::Open(session) => Some(session),
        _ => None,
    }
}

/// The server capability that says it shows an alert's buttons.
pub const ACTIONS: &str = "actions";
/// The server capability that says it takes a typed reply in the alert (KDE's extension).
pub const INLINE_REPLY: &str = "inline-reply";
/// The action that asks for the typed reply on such a server (its reserved name).
pub const ACTION_INLINE_REPLY: &str = "inline-reply";
/// The Reply button elsewhere: opens the window at the session's reply field.
pub const ACTION_REPLY: &str = "reply";
/// The hint that names the session in an inline reply field.
pub const REPLY_PLACEHOLDER_HINT: &str = "x-kde-reply-placeholder-text";

/// How an alert offers a reply to its session, given the server's capabilities: `None` where
/// the alert is not a finished turn, the session takes no prompt now, or the server shows no
/// buttons; else the inline field where the server has one, the window otherwise.
pub fn reply_offer(
    alert: &Alert,
    can_send: bool,
    capabilities: Option<&[String]>,
) -> Option<ReplyOffer> {
    if alert.kind != agent_tray::notify_policy::AlertKind::LongTurnFinished
        || alert.host.is_some()
        || !can_send
        || !shows_buttons(capabilities)
    {
        return None;
    }
    let inline = capabilities.is_some_and(|caps| caps.iter().any(|c| c == INLINE_REPLY));
    Some(if inline {
        ReplyOffer::Inline
    } else {
        ReplyOffer::Window
    })
}

/// Where an alert's Reply takes the user's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyOffer {
    /// In the alert itself (`inline-reply`): sent as typed.
    Inline,
    /// In the window's reply field, focused.
    Window,
}

impl ReplyOffer {
    /// The action key the alert carries for it.
    pub fn action(self) -> &'static str {
        match self {
            ReplyOffer::Inline => ACTION_INLINE_REPLY,
            ReplyOffer::Window => ACTION_REPLY,
        }
    }
}

/// What the app does with an alert's Reply: `Some(text)` typed in the alert is sent to the
/// session; `None` opens the window at its reply field.
pub type OnReply = Arc<dyn Fn(SessionKey, Option<String>) + Send + Sync>;

/// Whether a session (host and id) takes a prompt now.
pub type CanSend = Arc<dyn Fn(&SessionKey) -> bool + Send + Sync>;

/// What the app does when an alert's Allow or Deny is chosen: answer the request.
pub type OnAnswer = Arc<dyn Fn(RequestId, Answer) + Send + Sync>;

/// An alert on screen and the server's handle to close it.
#[cfg(all(unix, not(target_os = "macos")))]
type ShownAlert = (Alert, Arc<crate::alert_bus::ShownAlert>);

/// The alerts on screen that answer a request, kept to withdraw each once its request ends
/// (answered anywhere else, the agent moved on). Linux only: elsewhere nothing is kept.
#[derive(Clone, Default)]
pub struct OpenAlerts {
    #[cfg(all(unix, not(target_os = "macos")))]
    shown: Arc<std::sync::Mutex<Vec<ShownAlert>>>,
}

impl OpenAlerts {
    /// Withdraws the alerts of the session `key` (host and id: a remote's session with a local
    /// one's id withdraws nothing of the local one's) whose request `session` no longer shows
    /// (`None`: the session is gone). Closing is a D-Bus call: done on a blocking thread.
    #[cfg(all(unix, not(target_os = "macos")))]
    fn withdraw_stale(&self, key: &SessionKey, session: Option<&agent_tray::model::Session>) {
        let stale: Vec<Arc<crate::alert_bus::ShownAlert>> = {
            let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
            let (gone, kept): (Vec<_>, Vec<_>) = shown
                .drain(..)
                .partition(|(a, _)| a.key() == *key && a.is_stale(session));
            *shown = kept;
            gone.into_iter().map(|(_, h)| h).collect()
        };
        for handle in stale {
            tracing::info!(session_id = %key.session_id, host = ?key.host, "alert withdrawn: its request ended");
            tauri::async_runtime::spawn(async move { handle.close().await });
        }
    }

    #[cfg(not(all(unix, not(target_os = "macos"))))]
    fn withdraw_stale(&self, _key: &SessionKey, _session: Option<&agent_tray::model::Session>) {}

    /// Withdraws the session's alerts that `alert` replaces: a request's alert replaces the
    /// same kind of wait told a moment before its request opened, which could answer nothing
    /// (a question's "needs your input"; a permission's "needs permission" whose event the
    /// engine applied before its request).
    #[cfg(all(unix, not(target_os = "macos")))]
    fn withdraw_replaced(&self, alert: &Alert) {
        use agent_tray::notify_policy::AlertKind;
        if alert.answers.is_none()
            || !matches!(
                alert.kind,
                AlertKind::NeedsInput | AlertKind::NeedsPermission
            )
        {
            return;
        }
        let replaced: Vec<Arc<crate::alert_bus::ShownAlert>> = {
            let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
            let (gone, kept): (Vec<_>, Vec<_>) = shown.drain(..).partition(|(a, _)| {
                a.key() == alert.key() && a.kind == alert.kind && a.answers.is_none()
            });
            *shown = kept;
            gone.into_iter().map(|(_, h)| h).collect()
        };
        for handle in replaced {
            tracing::info!(session_id = %alert.session_id, "alert replaced by its request's own");
            tauri::async_runtime::spawn(async move { handle.close().await });
        }
    }
}

/// The server capability that says it parses markup in bodies.
pub const BODY_MARKUP: &str = "body-markup";

/// The alert's body as the server must receive it for it to be shown as the text it is:
/// `&`, `<` and `>` escaped when the server reads markup, untouched otherwise.
pub fn body_for_server(body: &str, server_reads_markup: bool) -> std::borrow::Cow<'_, str> {
    if !server_reads_markup || !body.contains(['&', '<', '>']) {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut escaped = String::with_capacity(body.len() + 16);
    for c in body.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    std::borrow::Cow::Owned(escaped)
}

/// Whether a server with these capabilities parses markup in bodies. When they could not be
/// asked, the body is escaped anyway: a stray `&amp;` is better than markup taken from session
/// text.
pub fn reads_markup(capabilities: Option<&[String]>) -> bool {
    capabilities.is_none_or(|caps| caps.iter().any(|c| c == BODY_MARKUP))
}

/// Whether a server with these capabilities shows an alert's buttons (unknown: no).
pub fn shows_buttons(capabilities: Option<&[String]>) -> bool {
    capabilities.is_some_and(|caps| caps.iter().any(|c| c == ACTIONS))
}

/// What the app does when an alert is clicked: show the window on that session.
pub type OnClick = Arc<dyn Fn(SessionKey) + Send + Sync>;

/// Where decided alerts go: the desktop, or a test's list.
pub trait AlertSink: Send + 'static {
    fn deliver(&self, alert: Alert);
}

/// Feeds each change to the policy and hands what it decides to `sink`. `focus` answers whether
/// the user is looking at a session's terminal; it is asked (on a blocking thread) only when an
/// alert is otherwise due.
pub async fn decide_loop(
    mut changes: broadcast::Receiver<SessionChange>,
    mut settings: watch::Receiver<AppSettings>,
    sink: impl AlertSink,
    focus: Arc<dyn TerminalFocus>,
    open: OpenAlerts,
    token: CancellationToken,
) {
    let mut current = settings.borrow_and_update().clone();
    let mut policy = NotifyPolicy::new(current.notifications.clone());
    loop {
        let change = tokio::select! {
            () = token.cancelled() => break,
            Ok(()) = settings.changed() => {
                current = settings.borrow_and_update().clone();
                policy.set_settings(current.notifications.clone());
                continue;
            }
            change = changes.recv() => change,
        };
        let (old_state, session) = match change {
            Ok(SessionChange::Added { session }) => (None, session),
            Ok(SessionChange::Changed { old_state, session }) => {
                open.withdraw_stale(&session.key(), Some(&session));
                (Some(old_state), session)
            }
            Ok(SessionChange::Removed { session_id, host }) => {
                open.withdraw_stale(&SessionKey { host, session_id }, None);
                continue;
            }
            // Missed changes cannot be alerted on after the fact; an old alert is noise anyway.
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "notifier fell behind; those changes raise no alerts"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        if !current.watches(session.agent) {
            continue;
        }
        let now = chrono::Utc::now();
        if policy.would_alert(old_state, &session, now) {
            let asked = session.clone();
            let focus = focus.clone();
            let looking =
                tauri::async_runtime::spawn_blocking(move || focus.user_is_looking(&asked))
                    .await
                    .unwrap_or(false);
            if looking {
                tracing::info!(session_id = %session.session_id, "no alert: the user is looking at its terminal");
            }
            if let Some(alert) = policy.decide_seen(old_state, &session, now, looking) {
                tracing::info!(session_id = %alert.session_id, kind = ?alert.kind, summary = %alert.summary, "alert");
                sink.deliver(alert);
            }
        }
        // The window filling up is news even to someone watching the terminal: agents show it
        // faintly, if at all.
        if let Some(alert) = policy.decide_context(&session, now) {
            tracing::info!(session_id = %alert.session_id, kind = ?alert.kind, summary = %alert.summary, "alert");
            sink.deliver(alert);
        }
        // A plan limit stopping the session: said once, with when it can go on.
        if let Some(alert) = policy.decide_blocked(&session, now) {
            tracing::info!(session_id = %alert.session_id, kind = ?alert.kind, summary = %alert.summary, "alert");
            sink.deliver(alert);
        }
    }
}

/// Alerts for the plans' windows as the engine's book changes: each window past its threshold
/// once ([`NotifyPolicy::decide_limit`]), under the same settings as every other alert.
pub async fn limit_alert_loop(
    book: Arc<agent_tray::plan_limits::PlanLimitsBook>,
    mut settings: watch::Receiver<AppSettings>,
    sink: impl AlertSink,
    token: CancellationToken,
) {
    let mut changes = book.subscribe();
    let mut current = settings.borrow_and_update().clone();
    let mut policy = NotifyPolicy::new(current.notifications.clone());
    loop {
        tokio::select! {
            () = token.cancelled() => break,
            Ok(()) = settings.changed() => {
                current = settings.borrow_and_update().clone();
                policy.set_settings(current.notifications.clone());
                continue;
            }
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
            }
        }
        let now = chrono::Utc::now();
        for window in book.current(now) {
            if !current.watches(window.agent) {
                continue;
            }
            if let Some(alert) = policy.decide_limit(&window, now) {
                tracing::info!(kind = ?alert.kind, summary = %alert.summary, "alert");
                sink.deliver(alert);
            }
        }
        // Once per burst: a remote gone wrong must not flood the log either.
        for host in policy.take_limit_bursts() {
            tracing::warn!(host = host.as_deref().unwrap_or("this machine"), "plan_limit_alerts_held_back: more plan-limit alerts than a host's pace allows; the rest of this span's are held back");
        }
    }
}

/// Shows alerts on the desktop from one background thread.
#[derive(Clone)]
pub struct DesktopAlerts {
    queue: mpsc::SyncSender<Alert>,
}

impl DesktopAlerts {
    /// Starts the alert thread; `on_click` runs (on a waiter thread) with the session's id when
    /// the user clicks an alert.
    pub fn start(app_name: String, reactions: AlertReactions, open: OpenAlerts) -> Self {
        let (queue, rx) = mpsc::sync_channel::<Alert>(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("desktop-alerts".into())
            .spawn(move || {
                let reported = AtomicBool::new(false);
                let waiters = Arc::new(AtomicUsize::new(0));
                let reactions = Reactions {
                    on_click: reactions.on_click,
                    on_answer: reactions.on_answer,
                    on_reply: reactions.on_reply,
                    can_send: reactions.can_send,
                    open,
                };
                for alert in rx {
                    show(&app_name, alert, &reported, &waiters, &reactions);
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the alert thread; no desktop alerts");
        }
        DesktopAlerts { queue }
    }
}

impl AlertSink for DesktopAlerts {
    fn deliver(&self, alert: Alert) {
        match self.queue.try_send(alert) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(alert)) => {
                tracing::warn!(session_id = %alert.session_id, "alert queue full; dropping this alert");
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {}
        }
    }
}

/// What the app does with what the user chooses on an alert (and asks to offer a Reply).
pub struct AlertReactions {
    pub on_click: OnClick,
    pub on_answer: OnAnswer,
    pub on_reply: OnReply,
    pub can_send: CanSend,
}

/// What the app does with what the user chooses on an alert, and where alerts that answer are
/// kept. Linux reports every choice back; macOS a request alert's (see [`follow_mac_answers`]).
#[derive(Clone)]
#[cfg_attr(not(all(unix, not(target_os = "macos"))), allow(dead_code))]
struct Reactions {
    on_click: OnClick,
    on_answer: OnAnswer,
    on_reply: OnReply,
    can_send: CanSend,
    open: OpenAlerts,
}

/// Shows an alert on the session bus ([`crate::alert_bus`]): to the notification server that owns
/// the name now, asked first what it shows (markup, buttons); its choice is then taken from that
/// server only.
#[cfg(all(unix, not(target_os = "macos")))]
fn show(
    app_name: &str,
    alert: Alert,
    reported: &AtomicBool,
    waiters: &Arc<AtomicUsize>,
    reactions: &Reactions,
) {
    reactions.open.withdraw_replaced(&alert);
    // Asked here, on the alert thread: working it out may read the session's process.
    let can_send = alert.kind == agent_tray::notify_policy::AlertKind::LongTurnFinished
        && (reactions.can_send)(&alert.key());
    match tauri::async_runtime::block_on(show_on_bus(app_name, &alert, can_send)) {
        Ok((shown, reply)) => follow_actions(Arc::new(shown), alert, reply, waiters, reactions),
        // Logged once: with no notification server every alert fails the same way.
        Err(error) if !reported.swap(true, Ordering::Relaxed) => {
            tracing::warn!(%error, "cannot show desktop alerts (no notification server?); alerts are off until one appears");
        }
        Err(error) => tracing::debug!(%error, "alert not shown"),
    }
}

#[cfg(all(unix, not(target_os = "macos")))]
async fn show_on_bus(
    app_name: &str,
    alert: &Alert,
    can_send: bool,
) -> Result<(crate::alert_bus::ShownAlert, Option<ReplyOffer>), crate::alert_bus::AlertBusError> {
    let bus = crate::alert_bus::AlertBus::connect().await?;
    let capabilities = bus.capabilities().await.ok();
    let body = body_for_server(&alert.body, reads_markup(capabilities.as_deref()));
    let buttons = alert.buttons();
    let mut actions = vec![(ACTION_DEFAULT, "Open")];
    // Allow and Deny (a question's options) only where the server shows buttons: elsewhere the
    // alert opens the window, where the request can be read whole before answering.
    if shows_buttons(capabilities.as_deref()) {
        actions.extend(
            buttons
                .iter()
                .map(|(key, label)| (key.as_str(), label.as_str())),
        );
    }
    let reply = reply_offer(alert, can_send, capabilities.as_deref());
    let placeholder = format!("Reply to {}…", alert.summary);
    let mut hints = Vec::new();
    if let Some(offer) = reply {
        actions.push((offer.action(), "Reply"));
        if offer == ReplyOffer::Inline {
            hints.push((REPLY_PLACEHOLDER_HINT, placeholder.as_str()));
        }
    }
    let shown = bus
        .show(app_name, &alert.summary, &body, &actions, &hints)
        .await?;
    Ok((shown, reply))
}

#[cfg(not(all(unix, not(target_os = "macos"))))]
fn show(
    app_name: &str,
    alert: Alert,
    reported: &AtomicBool,
    waiters: &Arc<AtomicUsize>,
    reactions: &Reactions,
) {
    #[cfg(target_os = "macos")]
    if !alert.buttons().is_empty() {
        follow_mac_answers(alert, waiters, reactions);
        return;
    }
    let _ = (waiters, reactions);
    let mut notification = notify_rust::Notification::new();
    // macOS and Windows show bodies as plain text.
    notification
        .appname(app_name)
        .summary(&alert.summary)
        .body(&alert.body);
    // No buttons on a toast, Allow and Deny included (see the module comment).
    #[cfg(windows)]
    notification.app_id(APP_USER_MODEL_ID);
    match notification.show() {
        Ok(_) => {}
        // Logged once: with no notification server every alert fails the same way.
        Err(error) if !reported.swap(true, Ordering::Relaxed) => {
            tracing::warn!(%error, "cannot show desktop alerts (no notification server?); alerts are off until one appears");
        }
        Err(error) => tracing::debug!(%error, "alert not shown"),
    }
}

/// Waits, on a thread of its own, for the user to click the alert, choose one of its buttons,
/// or close it. An alert that answers a request is kept in [`OpenAlerts`] meanwhile, so that an
/// answer given elsewhere withdraws it.
#[cfg(all(unix, not(target_os = "macos")))]
fn follow_actions(
    handle: Arc<crate::alert_bus::ShownAlert>,
    alert: Alert,
    reply: Option<ReplyOffer>,
    waiters: &Arc<AtomicUsize>,
    reactions: &Reactions,
) {
    if waiters.fetch_add(1, Ordering::AcqRel) >= MAX_WAITERS {
        waiters.fetch_sub(1, Ordering::AcqRel);
        tracing::debug!(session_id = %alert.session_id, "too many alerts open; this one's click is not followed");
        return;
    }
    // Kept while on screen: an alert that answers a request (withdrawn when it ends), and a
    // "needs your input" (replaced by its question's alert, if one follows).
    if alert.answers.is_some() || alert.kind == agent_tray::notify_policy::AlertKind::NeedsInput {
        let mut shown = reactions
            .open
            .shown
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        shown.push((alert.clone(), handle.clone()));
    }
    let waiters_left = waiters.clone();
    let reactions = reactions.clone();
    let spawned = std::thread::Builder::new()
        .name("alert-click".into())
        .spawn(move || {
            // Only the server that showed the alert is heard (see `alert_bus`).
            let response = tauri::async_runtime::block_on(handle.response());
            let chosen = match response {
                Some(crate::alert_bus::AlertResponse::Action(key))
                    if reply.is_some_and(|offer| offer.action() == key) =>
                {
                    tracing::info!(session_id = %alert.session_id, "alert's Reply chosen");
                    (reactions.on_reply)(alert.key(), None);
                    tauri::async_runtime::block_on(handle.close());
                    None
                }
                Some(crate::alert_bus::AlertResponse::Replied(text))
                    if reply == Some(ReplyOffer::Inline) =>
                {
                    tracing::info!(session_id = %alert.session_id, "alert replied to");
                    (reactions.on_reply)(alert.key(), Some(text));
                    None
                }
                Some(crate::alert_bus::AlertResponse::Action(key)) => Some(alert.action(&key)),
                Some(crate::alert_bus::AlertResponse::Replied(_))
                | Some(crate::alert_bus::AlertResponse::Closed)
                | None => None,
            };
            match chosen {
                Some(AlertAction::Open(session)) => {
                    tracing::info!(session_id = %session.session_id, host = ?session.host, "alert clicked");
                    (reactions.on_click)(session);
                    // A request's alert has done its part once the window shows the request:
                    // its buttons are no longer followed, so it must not stay on screen.
                    if alert.answers.is_some() {
                        tauri::async_runtime::block_on(handle.close());
                    }
                }
                Some(AlertAction::Answer(request, answer)) => {
                    tracing::info!(%request, "alert answered");
                    (reactions.on_answer)(request, answer);
                    // Some servers (dunst) keep an alert on screen after one of its buttons.
                    tauri::async_runtime::block_on(handle.close());
                }
                Some(AlertAction::Nothing) | None => {}
            }
            reactions
                .open
                .shown
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|(_, h)| !Arc::ptr_eq(h, &handle));
            waiters_left.fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        waiters.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What the user did with a macOS alert, as mac-notification-sys reports it; mirrored here so
/// that [`mac_choice`] is tested on every platform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub enum MacResponse {
    /// The alert's body was clicked.
    Clicked,
    /// One of its actions was chosen, by label (the library reports the label, not a key).
    Action(String),
    /// Closed, dismissed, or anything else: nothing to do.
    Other,
}

/// The label of the menu that holds an alert's answers on macOS.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub const MAC_ANSWER_MENU: &str = "Answer";

/// What a macOS alert's response means: a click opens the session, an action label is mapped
/// back to the button it names (only the alert's own buttons answer), anything else is nothing.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn mac_choice(response: &MacResponse, alert: &Alert) -> AlertAction {
    match response {
        MacResponse::Clicked => alert.action(ACTION_DEFAULT),
        MacResponse::Action(label) => alert
            .buttons()
            .iter()
            .find(|(_, shown)| shown == label)
            .map_or(AlertAction::Nothing, |(key, _)| alert.action(key)),
        MacResponse::Other => AlertAction::Nothing,
    }
}

/// Shows a request's alert with its answers as buttons and follows the user's choice on a
/// waiter thread (capped like Linux's, [`MAX_WAITERS`]); past the cap it is shown as a plain
/// alert whose choice is not followed.
#[cfg(target_os = "macos")]
fn follow_mac_answers(alert: Alert, waiters: &Arc<AtomicUsize>, reactions: &Reactions) {
    use mac_notification_sys::{MainButton, Notification, NotificationResponse};
    if waiters.fetch_add(1, Ordering::AcqRel) >= MAX_WAITERS {
        waiters.fetch_sub(1, Ordering::AcqRel);
        let _ = Notification::new()
            .title(&alert.summary)
            .message(&alert.body)
            .asynchronous(true)
            .send();
        return;
    }
    let waiters_left = waiters.clone();
    let reactions = reactions.clone();
    let spawned = std::thread::Builder::new()
        .name("alert-answer".into())
        .spawn(move || {
            let buttons = alert.buttons();
            let labels: Vec<&str> = buttons.iter().map(|(_, label)| label.as_str()).collect();
            let response = Notification::new()
                .title(&alert.summary)
                .message(&alert.body)
                .main_button(MainButton::DropdownActions(MAC_ANSWER_MENU, &labels))
                .close_button("Close")
                .wait_for_click(true)
                .send();
            let response = match response {
                Ok(NotificationResponse::Click) => MacResponse::Clicked,
                Ok(NotificationResponse::ActionButton(label)) => MacResponse::Action(label),
                Ok(_) => MacResponse::Other,
                Err(error) => {
                    tracing::debug!(%error, "alert not shown");
                    MacResponse::Other
                }
            };
            match mac_choice(&response, &alert) {
                AlertAction::Open(session) => (reactions.on_click)(session),
                AlertAction::Answer(request, answer) => {
                    tracing::info!(%request, "alert answered");
                    (reactions.on_answer)(request, answer);
                }
                AlertAction::Nothing => {}
            }
            waiters_left.fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        waiters.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a click on an alert does in the app: show the window on that session.
pub fn open_on_click<R: Runtime>(app: &AppHandle<R>) -> OnClick {
    let handle = app.clone();
    Arc::new(move |session| crate::window::focus_session(&handle, session))
}

/// What an alert's Allow or Deny does in the app: answer the request through the engine's book,
/// as from anywhere else (a refusal, say already answered, is logged).
pub fn answer_from_alert(registry: Arc<agent_tray::registry::SessionsRegistry>) -> OnAnswer {
    Arc::new(move |request, answer| {
        let registry = registry.clone();
        tauri::async_runtime::spawn(async move {
            let source = agent_tray::answering::AnswerSource::Alert;
            let named = request.as_str();
            if let Err(error) = registry.answer_routed(named, None, answer, source).await {
                tracing::warn!(%request, %error, "the alert's answer did not reach the agent");
            }
        });
    })
}

/// What an alert's Reply does in the app: typed in the alert, the text is sent to the session
/// as from the window (a refusal is said in an alert of its own, with the engine's sentence);
/// chosen as a button, the window opens at the session's reply field.
pub fn reply_from_alert<R: Runtime>(app: &AppHandle<R>) -> OnReply {
    let handle = app.clone();
    Arc::new(move |session: SessionKey, text: Option<String>| {
        let Some(text) = text else {
            crate::window::focus_reply(&handle, session);
            return;
        };
        let source = handle
            .state::<Arc<crate::sessions::SessionsSource>>()
            .inner()
            .clone();
        let app_name = handle.package_info().name.clone();
        tauri::async_runtime::spawn(async move {
            let sent = crate::commands::talk_to_session(
                &source,
                &session.session_id,
                session.host.as_deref(),
                agent_tray::talk_back::TalkOrder::Send {
                    prompt: match agent_tray::talk_back::PromptText::parse(&text, false) {
                        Ok(prompt) => prompt,
                        Err(refusal) => {
                            say_not_sent(&app_name, &refusal.to_string()).await;
                            return;
                        }
                    },
                },
            )
            .await;
            if let Err(error) = sent {
                tracing::warn!(session_id = %session.session_id, %error.message, "the alert's reply was not sent");
                say_not_sent(&app_name, &error.message).await;
            }
        });
    })
}

/// An alert saying a reply typed in an alert was not sent, and why (the engine's sentence).
async fn say_not_sent(app_name: &str, why: &str) {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let shown = async {
            let bus = crate::alert_bus::AlertBus::connect().await?;
            let capabilities = bus.capabilities().await.ok();
            let body = body_for_server(why, reads_markup(capabilities.as_deref()));
            bus.show(app_name, "Reply not sent", &body, &[], &[])
                .await
                .map(|_| ())
        };
        if let Err(error) = shown.await {
            tracing::debug!(%error, "alert not shown");
        }
    }
    #[cfg(not(all(unix, not(target_os = "macos"))))]
    let _ = (app_name, why);
}

/// Starts the policy loop and the alert thread for the app.
pub fn spawn<R: Runtime>(app: &AppHandle<R>, token: CancellationToken) {
    let source = app.state::<Arc<crate::sessions::SessionsSource>>();
    let changes = source.registry().subscribe();
    let settings = app.state::<crate::settings::SettingsStore>().subscribe();
    let open = OpenAlerts::default();
    let reactions = AlertReactions {
        on_click: open_on_click(app),
        on_answer: answer_from_alert(source.registry().clone()),
        on_reply: reply_from_alert(app),
        can_send: {
            let source = source.inner().clone();
            Arc::new(move |key: &SessionKey| source.can_send(key.host.as_deref(), &key.session_id))
        },
    };
    let sink = DesktopAlerts::start(app.package_info().name.clone(), reactions, open.clone());
    let focus: Arc<dyn TerminalFocus> = Arc::new(TmuxFocus::default());
    if let Some(limits) = app.try_state::<crate::limits::LimitsState>() {
        tauri::async_runtime::spawn(limit_alert_loop(
            limits.0.clone(),
            settings.clone(),
            sink.clone(),
            token.clone(),
        ));
    }
    tauri::async_runtime::spawn(decide_loop(changes, settings, sink, focus, open, token));
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_tray::notify_policy::AlertKind;

    fn alert() -> Alert {
        Alert {
            session_id: "s-died".into(),
            host: None,
            kind: AlertKind::ProcessDied,
            summary: "web: Claude's process 42 died".into(),
            body: String::new(),
            answers: None,
            shows_request_whole: false,
            choices: Vec::new(),
        }
    }

    #[test]
    fn a_macos_alerts_answer_is_read_back_by_its_label_and_only_its_own_buttons_answer() {
        let id = RequestId::parse("r7-k3x9");
        let mut asking = alert();
        asking.kind = AlertKind::NeedsPermission;
        asking.answers = Some(id.clone());
        asking.shows_request_whole = true;
        let allow = mac_choice(&MacResponse::Action("Allow".into()), &asking);
        assert_eq!(allow, AlertAction::Answer(id.clone(), Answer::Allow));
        let deny = mac_choice(&MacResponse::Action("Deny".into()), &asking);
        assert_eq!(
            deny,
            AlertAction::Answer(id, Answer::Deny { message: None })
        );
        // A click on the body opens the session; a label it did not offer, or a close, is nothing.
        let click = mac_choice(&MacResponse::Clicked, &asking);
        assert_eq!(click, AlertAction::Open(asking.key()));
        let other = mac_choice(&MacResponse::Action("Allow always".into()), &asking);
        assert_eq!(other, AlertAction::Nothing);
        assert_eq!(
            mac_choice(&MacResponse::Other, &asking),
            AlertAction::Nothing
        );
        // An alert with no request has no buttons: "Allow" from it answers nothing.
        let died = alert();
        let allow = mac_choice(&MacResponse::Action("Allow".into()), &died);
        assert_eq!(allow, AlertAction::Nothing);
        // A question's alert: each option's label answers the question with that label.
        let mut question = alert();
        question.kind = AlertKind::NeedsInput;
        question.answers = Some(RequestId::parse("r8-q"));
        question.choices = vec!["Postgres".into(), "SQLite".into()];
        let chosen = mac_choice(&MacResponse::Action("SQLite".into()), &question);
        let want = Answer::Questions {
            answers: vec![agent_tray::answering::QuestionAnswer {
                choices: vec!["SQLite".into()],
                text: None,
            }],
        };
        assert_eq!(chosen, AlertAction::Answer(RequestId::parse("r8-q"), want));
        let allow = mac_choice(&MacResponse::Action("Allow".into()), &question);
        assert_eq!(
            allow,
            AlertAction::Nothing,
            "a question's alert has no Allow"
        );
    }

    #[test]
    fn session_text_in_a_body_is_text_on_a_server_that_reads_markup() {
        let body = "/home/dev/<img src=x onerror=alert(1)> & <b>co</b>";
        assert_eq!(
            body_for_server(body, true),
            "/home/dev/&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;co&lt;/b&gt;"
        );
        // A server that shows bodies as plain text gets them as they are.
        assert_eq!(body_for_server(body, false), body);
        // An entity in the text stays the text it is ("&amp;" once escaped reads "&amp;").
        assert_eq!(body_for_server("a &amp; b", true), "a &amp;amp; b");
        assert_eq!(
            body_for_server("/home/dev/api (main)", true),
            "/home/dev/api (main)"
        );
    }

    #[test]
    fn a_finished_turn_offers_reply_only_when_its_session_takes_a_prompt_inline_where_the_server_can(
    ) {
        let caps = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let mut finished = alert();
        finished.kind = AlertKind::LongTurnFinished;
        // dunst: buttons, no typed reply: the window's reply field.
        let dunst = caps(&["actions", "body", "body-markup"]);
        assert_eq!(
            reply_offer(&finished, true, Some(&dunst)),
            Some(ReplyOffer::Window)
        );
        // KDE Plasma: the reply is typed in the alert.
        let plasma = caps(&["actions", "body", "inline-reply"]);
        assert_eq!(
            reply_offer(&finished, true, Some(&plasma)),
            Some(ReplyOffer::Inline)
        );
        assert_eq!(ReplyOffer::Inline.action(), "inline-reply");
        // A session that takes no prompt now, a server without buttons, or unknown ones: none.
        assert_eq!(reply_offer(&finished, false, Some(&plasma)), None);
        assert_eq!(reply_offer(&finished, true, Some(&caps(&["body"]))), None);
        assert_eq!(reply_offer(&finished, true, None), None);
        // Another kind of alert, or a remote's session: none.
        assert_eq!(reply_offer(&alert(), true, Some(&dunst)), None);
        let mut remote = finished.clone();
        remote.host = Some("devbox".into());
        assert_eq!(reply_offer(&remote, true, Some(&dunst)), None);
    }

    #[test]
    fn a_click_on_an_alert_opens_its_session_and_closing_it_opens_nothing() {
        // dunst, GNOME and KDE report a click on the body as the reserved "default" action;
        // an alert that expires or is dismissed reports "__closed" (notify-rust's name).
        assert_eq!(
            click_target("default", &alert()),
            Some(SessionKey {
                host: None,
                session_id: "s-died".into()
            })
        );
        let mut remote = alert();
        remote.host = Some("devbox".into());
        assert_eq!(
            click_target("default", &remote)
                .and_then(|k| k.host)
                .as_deref(),
            Some("devbox"),
            "a remote session's alert opens the remote session"
        );
        assert_eq!(click_target("__closed", &alert()), None);
        assert_eq!(
            click_target("something-else", &alert()),
            None,
            "an action we never offered opens nothing"
        );
    }
}
