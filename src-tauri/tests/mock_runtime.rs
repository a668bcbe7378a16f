//! Commands and events through Tauri's mock runtime: no display, no bus. The shell's state is
//! set up on a registry of the test's own, observations go in through the core, and what the UI
//! would receive comes out of the real command handlers and the real event bridge.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_tray::model::{Agent, EventKind, Observation, Session, SessionKey, SessionState};
use agent_tray::registry::SessionsRegistry;
use agent_tray_desktop::ipc::{
    AppSettings, EngineStatus, FocusSession, SessionEvent, Snapshot, EVENT_FOCUS, EVENT_SESSIONS,
};
use agent_tray_desktop::settings::SettingsStore;
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Listener, Manager, WebviewWindowBuilder};
use tokio_util::sync::CancellationToken;

struct Harness {
    app: tauri::App<tauri::test::MockRuntime>,
    window: tauri::WebviewWindow<tauri::test::MockRuntime>,
    registry: Arc<SessionsRegistry>,
    _dir: tempfile::TempDir,
}

fn harness() -> Harness {
    harness_on(Arc::new(SessionsRegistry::new()))
}

/// The shell's state on a registry of the test's own (a manual clock, say).
fn harness_on(registry: Arc<SessionsRegistry>) -> Harness {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let app = agent_tray_desktop::with_commands(mock_builder())
        .build(mock_context(noop_assets()))
        .unwrap_or_else(|e| panic!("{e}"));
    agent_tray_desktop::manage_state(
        &app,
        registry.clone(),
        Default::default(),
        SettingsStore::load(dir.path().join("settings.json")),
        EngineStatus::Running {
            socket: "/tmp/test.sock".into(),
        },
        dir.path().join("logs"),
    );
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    Harness {
        app,
        window,
        registry,
        _dir: dir,
    }
}

fn invoke(
    h: &Harness,
    cmd: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, serde_json::Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: tauri::ipc::CallbackFn(0),
        error: tauri::ipc::CallbackFn(1),
        url: "tauri://localhost"
            .parse()
            .unwrap_or_else(|e| panic!("{e}")),
        body: tauri::ipc::InvokeBody::Json(body),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(&h.window, request)
        .map(|b| b.deserialize::<serde_json::Value>().unwrap_or_default())
}

fn local(id: &str) -> SessionKey {
    SessionKey {
        host: None,
        session_id: id.into(),
    }
}

fn observe(registry: &SessionsRegistry, id: &str, event: EventKind, cwd: Option<&str>) {
    let obs = Observation::new(id, Agent::Claude, event, chrono::Utc::now())
        .with_cwd(cwd.map(String::from));
    registry.observe(obs).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_snapshot_command_returns_the_registrys_sessions_as_window_rows() {
    let h = harness();
    observe(
        &h.registry,
        "s1",
        EventKind::SessionStart,
        Some("/home/dev/api-server"),
    );
    observe(&h.registry, "s1", EventKind::PermissionRequest, None);
    let value = invoke(&h, "get_snapshot", serde_json::json!({})).unwrap_or_else(|e| panic!("{e}"));
    let snapshot: Snapshot = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(snapshot.sessions.len(), 1);
    let row = &snapshot.sessions[0];
    assert_eq!(row.project, "api-server");
    assert_eq!(row.state_label, "needs permission");
    assert_eq!(
        snapshot.engine,
        EngineStatus::Running {
            socket: "/tmp/test.sock".into()
        }
    );
    assert_eq!(snapshot.settings, AppSettings::default());
}

#[test]
fn a_command_error_reaches_the_ui_as_a_code_and_a_message() {
    let h = harness();
    let error = invoke(
        &h,
        "jump_to_session",
        serde_json::json!({"sessionId": "nope"}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "unknown_session", "{error}");
    assert_eq!(error["message"], "no session nope");
    // A live session cannot be dismissed: it might need the user.
    observe(&h.registry, "live", EventKind::SessionStart, Some("/tmp"));
    let error = invoke(
        &h,
        "dismiss_session",
        serde_json::json!({"sessionId": "live"}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "unknown_session", "{error}");
}

#[test]
fn saved_settings_are_applied_and_filter_the_snapshot() {
    let h = harness();
    observe(&h.registry, "c1", EventKind::SessionStart, Some("/tmp/a"));
    let settings = AppSettings {
        agents: vec![Agent::Codex],
        ..AppSettings::default()
    };
    invoke(
        &h,
        "save_settings",
        serde_json::json!({ "settings": settings }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(h.app.state::<SettingsStore>().get(), settings);
    let value = invoke(&h, "get_snapshot", serde_json::json!({})).unwrap_or_else(|e| panic!("{e}"));
    let snapshot: Snapshot = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
    assert!(snapshot.sessions.is_empty(), "Claude is no longer watched");
}

#[test]
fn registry_changes_reach_the_window_as_typed_events() {
    let h = harness();
    let received: Arc<Mutex<Vec<SessionEvent>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_SESSIONS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<SessionEvent>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let token = CancellationToken::new();
    agent_tray_desktop::events::spawn(h.app.handle(), token.clone());
    // Give the bridge a moment to subscribe before the first change.
    std::thread::sleep(Duration::from_millis(50));
    observe(
        &h.registry,
        "s1",
        EventKind::SessionStart,
        Some("/home/dev/web"),
    );
    observe(&h.registry, "s1", EventKind::UserPromptSubmit, None);
    let upserts = || -> Vec<(u64, String)> {
        received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|e| match e {
                SessionEvent::Upsert { seq, view } => Some((*seq, view.state_label.clone())),
                SessionEvent::Removed { .. } => None,
            })
            .collect()
    };
    let arrived = eventually(|| {
        upserts()
            .last()
            .is_some_and(|(_, label)| label == "working")
    });
    token.cancel();
    let got = upserts();
    assert!(arrived, "the window heard s1 working: {got:?}");
    // A burst of changes may arrive as one row; never out of order, never older than before.
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "{got:?}");
    assert_eq!(
        got.last().map(|(seq, _)| *seq),
        Some(2),
        "numbered by the registry"
    );
    let snap = snapshot(&h);
    assert_eq!(snap.seq, 2, "the snapshot is numbered alike");
}

struct Collect(Arc<Mutex<Vec<agent_tray::notify_policy::Alert>>>);

impl agent_tray_desktop::notifier::AlertSink for Collect {
    fn deliver(&self, alert: agent_tray::notify_policy::Alert) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(alert);
    }
}

/// The app's alert decisions on `registry`'s changes, running, with what they delivered.
struct Deciding {
    delivered: Arc<Mutex<Vec<agent_tray::notify_policy::Alert>>>,
    settings: tokio::sync::watch::Sender<AppSettings>,
    token: CancellationToken,
    task: tauri::async_runtime::JoinHandle<()>,
}

impl Deciding {
    fn start(
        registry: &SessionsRegistry,
        focus: Arc<dyn agent_tray_desktop::terminal_focus::TerminalFocus>,
    ) -> Self {
        let (settings, rx) = tokio::sync::watch::channel(AppSettings::default());
        let delivered: Arc<Mutex<Vec<agent_tray::notify_policy::Alert>>> = Arc::default();
        let token = CancellationToken::new();
        let task = tauri::async_runtime::spawn(agent_tray_desktop::notifier::decide_loop(
            registry.subscribe(),
            rx,
            Collect(delivered.clone()),
            focus,
            agent_tray_desktop::notifier::OpenAlerts::default(),
            token.clone(),
        ));
        Deciding {
            delivered,
            settings,
            token,
            task,
        }
    }

    /// With nobody looking at any terminal.
    fn unwatched(registry: &SessionsRegistry) -> Self {
        Self::start(
            registry,
            Arc::new(agent_tray_desktop::terminal_focus::NeverLooking),
        )
    }

    fn alerts(&self) -> Vec<agent_tray::notify_policy::Alert> {
        self.delivered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The alerts once there are `n` of them, or as they are after 5 s.
    fn wait_for(&self, n: usize) -> Vec<agent_tray::notify_policy::Alert> {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let now = self.alerts();
            if now.len() >= n || std::time::Instant::now() > deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(self) {
        self.token.cancel();
        let _ = tauri::async_runtime::block_on(self.task);
    }
}

#[test]
fn a_killed_process_and_a_permission_wait_become_alerts_and_a_clean_end_does_not() {
    let registry = Arc::new(SessionsRegistry::new());
    let deciding = Deciding::unwatched(&registry);
    observe(
        &registry,
        "dies",
        EventKind::SessionStart,
        Some("/home/dev/api-server"),
    );
    observe(&registry, "dies", EventKind::UserPromptSubmit, None);
    registry.end("dies", agent_tray::model::EndReason::ProcessGone);
    observe(
        &registry,
        "asks",
        EventKind::SessionStart,
        Some("/home/dev/web"),
    );
    observe(&registry, "asks", EventKind::PermissionRequest, None);
    observe(
        &registry,
        "exits",
        EventKind::SessionStart,
        Some("/home/dev/cli"),
    );
    observe(&registry, "exits", EventKind::SessionEnd, None);
    let summaries: Vec<String> = deciding
        .wait_for(2)
        .into_iter()
        .map(|a| a.summary)
        .collect();
    // Settings switched off at run time apply to the next change.
    let mut off = AppSettings::default();
    off.notifications.enabled = false;
    let _ = deciding.settings.send(off);
    std::thread::sleep(Duration::from_millis(50));
    observe(
        &registry,
        "asks2",
        EventKind::SessionStart,
        Some("/home/dev/web2"),
    );
    observe(&registry, "asks2", EventKind::PermissionRequest, None);
    std::thread::sleep(Duration::from_millis(200));
    let while_off = deciding.alerts().len();
    // Positive control: switched back on, the same loop alerts on the next wait, so the silence
    // above was the setting's doing and not a dead loop. Had the loop stopped, this fails.
    let _ = deciding.settings.send(AppSettings::default());
    std::thread::sleep(Duration::from_millis(50));
    observe(
        &registry,
        "asks3",
        EventKind::SessionStart,
        Some("/home/dev/web3"),
    );
    observe(&registry, "asks3", EventKind::PermissionRequest, None);
    let back_on = eventually(|| deciding.alerts().len() > 2);
    let after: Vec<String> = deciding.alerts().into_iter().map(|a| a.summary).collect();
    deciding.stop();
    assert_eq!(
        summaries,
        [
            "api-server: Claude's process died",
            "web: Claude needs permission"
        ]
    );
    assert_eq!(while_off, 2, "nothing while alerts were switched off");
    assert!(back_on, "alerts switched back on: the next wait raises one");
    assert_eq!(
        after[2..],
        ["web3: Claude needs permission"],
        "the wait seen while off is not alerted late"
    );
}

/// Polls `check` until it holds or a few seconds pass; returns whether it held.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if check() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_ttl_and_launch_at_login_from_the_settings_window_apply_without_a_restart() {
    // The user opens Settings, sets the TTL to 42 s and ticks "Launch at login", saves; then
    // clears the TTL and unticks. The registry's reaper and the autostart folder follow at once.
    let h = harness();
    // The switch records what the applier asked for (the plugin's own files are tested for
    // real, in a temp home, by autostart_migration.rs).
    let switched = Arc::new(std::sync::Mutex::new(Vec::<bool>::new()));
    struct Recorded(Arc<std::sync::Mutex<Vec<bool>>>);
    impl agent_tray_desktop::autostart::LoginSwitch for Recorded {
        fn set(&self, enabled: bool) -> Result<(), agent_tray_desktop::autostart::LoginError> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(enabled);
            Ok(())
        }
    }
    let entry_on = || switched.lock().unwrap_or_else(|p| p.into_inner()).last() == Some(&true);
    let default_ttl = h.registry.session_ttl();
    let token = CancellationToken::new();
    agent_tray_desktop::spawn_settings_applier(
        h.app.handle(),
        Some(Box::new(Recorded(switched.clone()))),
        token.clone(),
    );
    let on = AppSettings {
        session_ttl_secs: Some(42),
        launch_at_login: true,
        ..AppSettings::default()
    };
    invoke(&h, "save_settings", serde_json::json!({ "settings": on }))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        eventually(|| h.registry.session_ttl() == Duration::from_secs(42)),
        "the registry reaps with the new TTL (now {:?})",
        h.registry.session_ttl()
    );
    assert!(eventually(&entry_on), "launch at login was turned on");
    invoke(
        &h,
        "save_settings",
        serde_json::json!({ "settings": AppSettings::default() }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        eventually(|| h.registry.session_ttl() == default_ttl && !entry_on()),
        "back to the engine's default TTL ({:?} now) and launch at login off",
        h.registry.session_ttl()
    );
    token.cancel();
}

#[test]
fn a_clicked_alert_tells_the_window_to_show_its_session() {
    // The notification server reported a click on the alert for "s-died": the app shows the
    // window and the UI selects that row when it hears focus-session.
    let h = harness();
    let received: Arc<Mutex<Vec<FocusSession>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_FOCUS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<FocusSession>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let _ = h.window.hide();
    // The window's page has set its listeners and caught up (what its start does).
    let memory = h
        .app
        .state::<agent_tray_desktop::window::WindowMemoryStore>();
    let _ = memory.take_listening();
    let on_click = agent_tray_desktop::notifier::open_on_click(h.app.handle());
    on_click(SessionKey {
        host: Some("devbox".into()),
        session_id: "s-died".into(),
    });
    assert!(
        eventually(|| !received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()),
        "the window heard which session to show"
    );
    assert_eq!(
        *received.lock().unwrap_or_else(|p| p.into_inner()),
        [FocusSession {
            session_id: "s-died".into(),
            host: Some("devbox".into()),
            reply: false,
        }],
        "the window is told the session's host too: a local session may have the same id"
    );
}

#[test]
fn a_click_before_the_windows_page_listens_is_kept_for_its_catch_up() {
    // The window exists (created a moment ago, or started as the tray menu opened) but its page
    // has no listener yet: an event would reach nobody, so the shell keeps the request.
    let h = harness();
    let received: Arc<Mutex<Vec<FocusSession>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_FOCUS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<FocusSession>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let memory = h
        .app
        .state::<agent_tray_desktop::window::WindowMemoryStore>();
    memory.not_listening();
    let on_click = agent_tray_desktop::notifier::open_on_click(h.app.handle());
    on_click(local("s-died"));
    // The page catches up once its listeners are set: the request is there, once.
    let mut caught_up = None;
    assert!(
        eventually(|| {
            let memory = h
                .app
                .state::<agent_tray_desktop::window::WindowMemoryStore>();
            caught_up = memory.take_listening().focus;
            if caught_up.is_none() {
                memory.not_listening();
            }
            caught_up.is_some()
        }),
        "the request was kept for the page"
    );
    assert_eq!(caught_up, Some(local("s-died")));
    assert!(
        received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty(),
        "no event was sent to a page that could not hear it"
    );
}

struct Looking(Vec<String>);

impl agent_tray_desktop::terminal_focus::TerminalFocus for Looking {
    fn user_is_looking(&self, session: &agent_tray::model::Session) -> bool {
        self.0.contains(&session.session_id)
    }
}

#[test]
fn a_session_the_user_is_looking_at_raises_no_alert_and_others_still_do() {
    let registry = Arc::new(SessionsRegistry::new());
    let deciding = Deciding::start(&registry, Arc::new(Looking(vec!["watched".into()])));
    for id in ["watched", "elsewhere"] {
        observe(
            &registry,
            id,
            EventKind::SessionStart,
            Some("/home/dev/api"),
        );
        observe(&registry, id, EventKind::PermissionRequest, None);
    }
    assert!(eventually(|| !deciding.alerts().is_empty()));
    std::thread::sleep(Duration::from_millis(200));
    let got: Vec<String> = deciding
        .alerts()
        .into_iter()
        .map(|a| a.session_id)
        .collect();
    deciding.stop();
    assert_eq!(got, ["elsewhere"]);
}

fn snapshot(h: &Harness) -> Snapshot {
    let value = invoke(h, "get_snapshot", serde_json::json!({})).unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

fn row_ids(snapshot: &Snapshot) -> Vec<String> {
    let mut ids: Vec<String> = snapshot
        .sessions
        .iter()
        .map(|v| v.session.session_id.clone())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_session_dismissed_while_ended_is_shown_again_once_it_is_resumed() {
    let h = harness();
    let received: Arc<Mutex<Vec<SessionEvent>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_SESSIONS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<SessionEvent>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let token = CancellationToken::new();
    agent_tray_desktop::events::spawn(h.app.handle(), token.clone());
    std::thread::sleep(Duration::from_millis(50));
    observe(
        &h.registry,
        "s1",
        EventKind::SessionStart,
        Some("/home/dev/api"),
    );
    observe(&h.registry, "s1", EventKind::SessionEnd, None);
    invoke(
        &h,
        "dismiss_session",
        serde_json::json!({"sessionId": "s1"}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        row_ids(&snapshot(&h)).is_empty(),
        "dismissed while ended: hidden"
    );
    // The user resumes it (`claude --resume s1`): it works again and must be seen.
    observe(&h.registry, "s1", EventKind::UserPromptSubmit, None);
    let snap = snapshot(&h);
    assert_eq!(row_ids(&snap), ["s1"], "a resumed session is live again");
    assert_eq!(snap.sessions[0].state_label, "working");
    // The window hears it too: the dismissal removed the row, the resume brings it back.
    let last_for_s1 = || {
        received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .map(|e| match e {
                SessionEvent::Upsert { view, .. } => view.state_label.clone(),
                SessionEvent::Removed { .. } => "removed".to_string(),
            })
    };
    let heard = eventually(|| last_for_s1().as_deref() == Some("working"));
    token.cancel();
    assert!(heard, "the window's last word on s1: {:?}", last_for_s1());
}

#[test]
fn the_window_events_keep_the_same_rows_as_a_fresh_snapshot() {
    // 25 sessions end and leave the live list: a window that applied every event since its
    // first snapshot must list what a fresh snapshot lists, "Ended recently" capped alike.
    let clock = Arc::new(agent_tray::clock::ManualClock::new(chrono::Utc::now()));
    let registry = Arc::new(SessionsRegistry::with_config(
        agent_tray::registry::RegistryConfig::default(),
        clock.clone(),
    ));
    let h = harness_on(registry);
    let received: Arc<Mutex<Vec<SessionEvent>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_SESSIONS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<SessionEvent>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let first = snapshot(&h);
    let token = CancellationToken::new();
    agent_tray_desktop::events::spawn(h.app.handle(), token.clone());
    std::thread::sleep(Duration::from_millis(50));
    observe(
        &h.registry,
        "live",
        EventKind::UserPromptSubmit,
        Some("/home/dev/live"),
    );
    for n in 0..25 {
        let id = format!("done-{n:02}");
        clock.advance(Duration::from_secs(1));
        observe(
            &h.registry,
            &id,
            EventKind::SessionStart,
            Some("/home/dev/x"),
        );
        observe(&h.registry, &id, EventKind::SessionEnd, None);
    }
    clock.advance(agent_tray::registry::ENDED_TTL + Duration::from_secs(1));
    h.registry.reap();
    let fresh = snapshot(&h);
    let window_rows = || {
        let mut rows: std::collections::BTreeMap<String, String> = first
            .sessions
            .iter()
            .map(|v| (v.session.session_id.clone(), v.state_label.clone()))
            .collect();
        for event in received.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            match event {
                SessionEvent::Upsert { view, .. } => {
                    rows.insert(view.session.session_id.clone(), view.state_label.clone());
                }
                SessionEvent::Removed { session_id, .. } => {
                    rows.remove(session_id);
                }
            }
        }
        rows
    };
    let expected: std::collections::BTreeMap<String, String> = fresh
        .sessions
        .iter()
        .map(|v| (v.session.session_id.clone(), v.state_label.clone()))
        .collect();
    let agreed = eventually(|| window_rows() == expected);
    token.cancel();
    let ended = fresh
        .sessions
        .iter()
        .filter(|v| v.state_label == "ended")
        .count();
    assert_eq!(ended, 20, "the snapshot shows the 20 most recently ended");
    assert!(
        !expected.contains_key("done-00"),
        "the oldest ending is beyond the cap: {expected:?}"
    );
    assert!(
        agreed,
        "events left the window with {:?}, a snapshot says {expected:?}",
        window_rows()
    );
}

/// A permission wait whose request this machine can answer raises an alert that answers it;
/// its Allow goes through the engine's book like any other answer (recorded as from an alert),
/// and reaches the waiting hook.
#[test]
fn a_permission_alert_offers_the_request_and_its_allow_reaches_the_waiting_hook() {
    use agent_tray::answering::{Answer, HookDecision};
    use agent_tray::registry::answers::AskOutcome;
    let registry = Arc::new(SessionsRegistry::new());
    let closed = registry.subscribe_closed_requests();
    let deciding = Deciding::unwatched(&registry);
    observe(&registry, "asks", EventKind::SessionStart, Some("/w/api"));
    observe(&registry, "asks", EventKind::UserPromptSubmit, None);
    let asked = common::ask_to_run(
        &registry,
        Observation::new(
            "asks",
            Agent::Claude,
            EventKind::PermissionRequest,
            chrono::Utc::now(),
        ),
        "c1",
        "npm run migrate",
        true,
    );
    let AskOutcome::Waiting { id, decision, .. } = asked else {
        panic!("the request is open");
    };
    let alert = deciding
        .wait_for(1)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no alert for the wait"));
    assert_eq!(
        alert.answers.as_ref(),
        Some(&id),
        "the alert already knows the request"
    );
    assert!(alert.body.contains("npm run migrate"), "{}", alert.body);

    // The user chooses Allow on the alert.
    let on_answer = agent_tray_desktop::notifier::answer_from_alert(registry.clone());
    let agent_tray::notify_policy::AlertAction::Answer(request, answer) = alert.action("allow")
    else {
        panic!("Allow answers the request");
    };
    on_answer(request, answer);
    let delivery = tauri::async_runtime::block_on(async {
        tokio::time::timeout(Duration::from_secs(5), decision).await
    })
    .unwrap_or_else(|_| panic!("the hook heard nothing"))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(delivery.decision, HookDecision::Allow);
    if let Some(printed) = delivery.printed {
        let _ = printed.send(());
    }
    let mut closed = closed;
    let recorded = tauri::async_runtime::block_on(async {
        tokio::time::timeout(Duration::from_secs(5), closed.recv()).await
    })
    .unwrap_or_else(|_| panic!("nothing recorded"))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        recorded.outcome,
        agent_tray::answering::Outcome::Answered {
            answer: Answer::Allow,
            source: agent_tray::answering::AnswerSource::Alert
        }
    );
    assert!(registry.pending().is_empty());
    deciding.stop();
}

/// The hook journals its PermissionRequest before it asks; on a loaded machine the engine's
/// journal replay can apply that event before the hook's ask arrives (a CI run: the alert
/// offered only Open, and nothing could answer from it). The request's arrival then raises the
/// alert that answers it, within the cooldown, and only once.
#[test]
fn a_request_that_opens_after_its_event_was_applied_gets_an_alert_that_answers_it() {
    use agent_tray::registry::answers::AskOutcome;
    let registry = Arc::new(SessionsRegistry::new());
    let deciding = Deciding::unwatched(&registry);
    observe(&registry, "late", EventKind::SessionStart, Some("/w/api"));
    observe(&registry, "late", EventKind::UserPromptSubmit, None);
    let mut event = Observation::new(
        "late",
        Agent::Claude,
        EventKind::PermissionRequest,
        chrono::Utc::now(),
    );
    event.seq = Some("7-late".into());
    // The replay's copy first, then the hook's ask with the same record.
    registry
        .observe(event.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    let first = deciding.wait_for(1);
    assert_eq!(first.len(), 1, "the wait alerts: {first:?}");
    assert_eq!(first[0].answers, None, "no request yet: nothing to answer");
    let AskOutcome::Waiting { id, .. } =
        common::ask_to_run(&registry, event, "c1", "touch made", true)
    else {
        panic!("the request is open");
    };
    let both = deciding.wait_for(2);
    assert_eq!(both.len(), 2, "the request's own alert: {both:?}");
    assert_eq!(both[1].answers.as_ref(), Some(&id));
    assert!(
        both[1].buttons().iter().any(|(_, label)| label == "Allow"),
        "{:?}",
        both[1].buttons()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(deciding.alerts().len(), 2, "and only once");
    deciding.stop();
}

/// Issue 27, point 4: a dev box announces a session whose id is also a local session's (ids are
/// each host's own), and another that exists only there. The window's commands act on the
/// session of the row's host: the remote's never stands in for the local one, and a command
/// without a host never reaches a remote's.
#[test]
fn commands_act_on_the_session_of_the_rows_host_and_never_on_another_hosts_with_that_id() {
    let h = harness();
    observe(
        &h.registry,
        "same",
        EventKind::SessionStart,
        Some("/home/dev/here"),
    );
    let far = |id: &str, state: SessionState| {
        let mut s = Session::new(id, Agent::Claude, state, chrono::Utc::now());
        s.host = Some("devbox".into());
        s.cwd = Some("/srv/far".into());
        s
    };
    h.registry.set_remote_sessions(
        "devbox",
        vec![
            far("same", SessionState::Ended),
            far("only-far", SessionState::Working),
        ],
    );
    let rows = snapshot(&h).sessions;
    let same: Vec<Option<&str>> = rows
        .iter()
        .filter(|v| v.session.session_id == "same")
        .map(|v| v.session.host.as_deref())
        .collect();
    assert_eq!(same.len(), 2, "both rows are listed: {same:?}");

    // The remote row's "Dismiss" dismisses the remote ending, not the live local session.
    invoke(
        &h,
        "dismiss_session",
        serde_json::json!({"sessionId": "same", "host": "devbox"}),
    )
    .unwrap_or_else(|e| panic!("the remote ending is dismissed: {e}"));
    let rows = snapshot(&h).sessions;
    let same: Vec<Option<&str>> = rows
        .iter()
        .filter(|v| v.session.session_id == "same")
        .map(|v| v.session.host.as_deref())
        .collect();
    assert_eq!(
        same,
        [None],
        "the local row stays, the remote one is hidden"
    );
    // Positive control: the local row's "Dismiss" finds the local (live) session and refuses.
    let error = invoke(
        &h,
        "dismiss_session",
        serde_json::json!({"sessionId": "same", "host": null}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "unknown_session", "{error}");

    // A jump without a host is a local row's: a remote session with that id is not it.
    let error = invoke(
        &h,
        "jump_to_session",
        serde_json::json!({"sessionId": "only-far"}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "unknown_session", "{error}");
    let error = invoke(
        &h,
        "reveal_transcript",
        serde_json::json!({"sessionId": "only-far", "host": null}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "unknown_session", "{error}");

    // A remote row's request is answered on its machine, whatever its id.
    let error = invoke(
        &h,
        "answer_request",
        serde_json::json!({"requestId": "r1-abc", "host": "devbox", "answer": "allow", "message": null, "from": "window"}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "answer_refused", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("on devbox"),
        "{error}"
    );
}

/// A plan window reported past 90 % raises one alert, however often the book changes after;
/// with the switch off it raises none, and the next window alerts again once the one told of
/// has reset.
#[test]
fn a_plan_window_nearly_used_alerts_once_and_the_switch_silences_it() {
    let book = Arc::new(agent_tray::plan_limits::PlanLimitsBook::default());
    let mut settings = AppSettings::default();
    settings.notifications.plan_limit_nearly_used = false;
    let (tx, rx) = tokio::sync::watch::channel(settings);
    let alerts: Arc<Mutex<Vec<agent_tray::notify_policy::Alert>>> = Arc::default();
    let token = CancellationToken::new();
    let task = tauri::async_runtime::spawn(agent_tray_desktop::notifier::limit_alert_loop(
        book.clone(),
        rx,
        Collect(alerts.clone()),
        token.clone(),
    ));
    let now = chrono::Utc::now();
    let window = |used: f64, reset_in: chrono::Duration| agent_tray::plan_limits::PlanWindow {
        agent: agent_tray::model::Agent::Codex,
        host: None,
        account: "pro".into(),
        window: "5h".into(),
        window_minutes: Some(300),
        used_percent: used,
        resets_at: Some(now + reset_in),
        seen_at: now,
        session_id: "t1".into(),
    };
    let soon = chrono::Duration::seconds(2);
    let count = || alerts.lock().unwrap_or_else(|p| p.into_inner()).len();
    book.apply(vec![window(95.0, soon)]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(count(), 0, "switched off");
    let mut on = AppSettings::default();
    on.notifications.plan_limit_nearly_used = true;
    let _ = tx.send(on);
    std::thread::sleep(Duration::from_millis(50));
    let mut later = window(96.0, soon);
    later.seen_at = now + chrono::Duration::milliseconds(300);
    book.apply(vec![later]);
    assert!(eventually(|| count() == 1), "one alert once switched on");
    let mut again = window(97.0, chrono::Duration::hours(3));
    again.seen_at = now + chrono::Duration::milliseconds(400);
    book.apply(vec![again]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        count(),
        1,
        "once per window, a new reset time announced before it reset included"
    );
    std::thread::sleep(Duration::from_millis(2_000));
    let mut next = window(91.0, chrono::Duration::hours(7));
    next.seen_at = now + chrono::Duration::seconds(3);
    book.apply(vec![next]);
    assert!(
        eventually(|| count() == 2),
        "the next window alerts again, the one told of having reset"
    );
    token.cancel();
    let _ = tauri::async_runtime::block_on(task);
    let summary = alerts.lock().unwrap_or_else(|p| p.into_inner())[0]
        .summary
        .clone();
    assert_eq!(summary, "Codex: 96% of the 5h window used");
}

/// Issue 37, point 4, at the alerts: the book changed hundreds of times a second for 3 s, each
/// time with a new reset time for the same window and a new account (what a hostile remote
/// sends): the alerts decided over that time are one for the window and the host's pace for
/// the accounts, not one per change.
#[test]
fn a_flood_of_plan_windows_with_new_reset_times_raises_a_bounded_number_of_alerts() {
    let book = Arc::new(agent_tray::plan_limits::PlanLimitsBook::default());
    let (_tx, rx) = tokio::sync::watch::channel(AppSettings::default());
    let alerts: Arc<Mutex<Vec<agent_tray::notify_policy::Alert>>> = Arc::default();
    let token = CancellationToken::new();
    let task = tauri::async_runtime::spawn(agent_tray_desktop::notifier::limit_alert_loop(
        book.clone(),
        rx,
        Collect(alerts.clone()),
        token.clone(),
    ));
    let start = chrono::Utc::now();
    let window = |n: i64, account: String| agent_tray::plan_limits::PlanWindow {
        agent: agent_tray::model::Agent::Codex,
        host: None,
        account,
        window: "5h".into(),
        window_minutes: Some(300),
        used_percent: 95.0,
        resets_at: Some(start + chrono::Duration::hours(2) + chrono::Duration::seconds(n)),
        seen_at: start + chrono::Duration::milliseconds(n),
        session_id: "t1".into(),
    };
    let began = std::time::Instant::now();
    let mut n = 0;
    while began.elapsed() < Duration::from_secs(3) {
        book.replace_host(
            "evil",
            vec![window(n, "pro".into()), window(n, format!("acct-{n}"))],
        );
        n += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(300));
    let count = alerts.lock().unwrap_or_else(|p| p.into_inner()).len();
    println!("{n} book changes in 3 s: {count} alerts");
    assert!(n > 300, "the flood was a flood: {n} changes");
    assert!(
        (1..=agent_tray::notify_policy::LIMIT_ALERTS_PER_SPAN as usize).contains(&count),
        "{count} alerts for {n} changes"
    );
    token.cancel();
    let _ = tauri::async_runtime::block_on(task);
}

/// The row of `id` (this machine's) in a fresh snapshot.
fn row_of(h: &Harness, id: &str) -> agent_tray::tray_model::SessionView {
    snapshot(h)
        .sessions
        .into_iter()
        .find(|v| v.session.session_id == id && v.session.host.is_none())
        .unwrap_or_else(|| panic!("no row {id}"))
}

/// A stand-in for an agent's own way in (Codex's app-server connection) reaching `ids`: each
/// order it gets is recorded and answered with what `answer` says, on a thread of its own.
fn way_in(
    h: &Harness,
    ids: &[&str],
    answer: fn(&agent_tray::talk_back::TalkOrder) -> Result<(), agent_tray::talk_back::TalkFailure>,
) -> (
    agent_tray::talk_back::InboxGuard,
    Arc<Mutex<Vec<agent_tray::talk_back::TalkOrder>>>,
) {
    use agent_tray::talk_back::{Reach, TalkRoute};
    let source = h
        .app
        .state::<Arc<agent_tray_desktop::sessions::SessionsSource>>();
    let reach = Reach::Sessions(Arc::new(Mutex::new(
        ids.iter().map(|id| id.to_string()).collect(),
    )));
    let (guard, mut orders) = source.talk().open(TalkRoute::AppServer, reach);
    let got: Arc<Mutex<Vec<agent_tray::talk_back::TalkOrder>>> = Arc::default();
    let seen = got.clone();
    std::thread::spawn(move || {
        while let Some(order) = orders.blocking_recv() {
            let reply = answer(&order.order);
            seen.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(order.order);
            let _ = order.done.send(reply);
        }
    });
    (guard, got)
}

/// The window's reply field and Stop button: the rows say what the engine allows now (the same
/// `can_send` / `can_stop` as `list --json`), a send goes through the engine's one way in with
/// the text as typed, and every refusal reaches the UI as a stable code and the engine's
/// sentence. Stands for the user replying to an idle Codex session and stopping a busy one.
#[test]
fn the_window_sends_and_stops_through_the_engine_and_each_refusal_is_a_code_and_a_sentence() {
    let h = harness();
    observe(
        &h.registry,
        "idle",
        EventKind::SessionStart,
        Some("/home/dev/api"),
    );
    observe(
        &h.registry,
        "busy",
        EventKind::SessionStart,
        Some("/home/dev/web"),
    );
    observe(&h.registry, "busy", EventKind::UserPromptSubmit, None);
    // No way in yet: the rows offer neither, and a send says why in the engine's words.
    let idle = row_of(&h, "idle");
    assert!(
        !idle.session.can_send && !idle.session.can_stop,
        "no way in, nothing offered"
    );
    let error = invoke(
        &h,
        "send_prompt",
        serde_json::json!({"sessionId": "idle", "host": null, "text": "go on"}),
    )
    .err()
    .unwrap_or_default();
    assert_eq!(error["code"], "talk_refused", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("nothing was sent"),
        "{error}"
    );

    // The agent's own way in reaches both: the idle row takes a reply, the busy one a stop.
    let (_guard, got) = way_in(&h, &["idle", "busy"], |order| match order {
        agent_tray::talk_back::TalkOrder::Send { .. } => Ok(()),
        agent_tray::talk_back::TalkOrder::Stop => Err(
            agent_tray::talk_back::TalkFailure::NotDelivered("the server did not answer".into()),
        ),
    });
    let (idle, busy) = (row_of(&h, "idle"), row_of(&h, "busy"));
    assert!(
        idle.session.can_send && !idle.session.can_stop,
        "{:?}",
        idle.session
    );
    assert!(
        !busy.session.can_send && busy.session.can_stop,
        "{:?}",
        busy.session
    );

    // Typed text goes as typed: both lines, one prompt.
    let sent = invoke(
        &h,
        "send_prompt",
        serde_json::json!({"sessionId": "idle", "host": null, "text": "run the tests\nthen fix them"}),
    );
    assert_eq!(sent, Ok(serde_json::Value::Null));
    let orders = got.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match orders.as_slice() {
        [agent_tray::talk_back::TalkOrder::Send { prompt }] => {
            assert_eq!(prompt.as_str(), "run the tests\nthen fix them")
        }
        other => panic!("the agent was given {other:?}"),
    }

    let refused = |cmd: &str, body: serde_json::Value| -> (String, String) {
        let e = invoke(&h, cmd, body).err().unwrap_or_default();
        (
            e["code"].as_str().unwrap_or_default().to_string(),
            e["message"].as_str().unwrap_or_default().to_string(),
        )
    };
    // A control character would be a key in a terminal: refused before any route sees it.
    let (code, message) = refused(
        "send_prompt",
        serde_json::json!({"sessionId": "idle", "host": null, "text": "hi\u{1b}[A"}),
    );
    assert_eq!(code, "talk_refused");
    assert!(message.contains("control character"), "{message}");
    // A busy session takes no prompt; its stop went out and its server failed to say so.
    let (code, message) = refused(
        "send_prompt",
        serde_json::json!({"sessionId": "busy", "host": null, "text": "more"}),
    );
    assert_eq!(code, "talk_refused");
    assert!(message.contains("working on a turn"), "{message}");
    let (code, message) = refused(
        "stop_turn",
        serde_json::json!({"sessionId": "busy", "host": null}),
    );
    assert_eq!(code, "talk_not_delivered", "{message}");
    assert!(message.contains("did not answer"), "{message}");
    // No such session; a remote's session is sent to over ssh, not from here.
    let (code, _) = refused(
        "stop_turn",
        serde_json::json!({"sessionId": "gone", "host": null}),
    );
    assert_eq!(code, "unknown_session");
    let mut far = Session::new("far", Agent::Codex, SessionState::Idle, chrono::Utc::now());
    far.host = Some("devbox".into());
    far.can_send = true;
    h.registry.set_remote_sessions("devbox", vec![far]);
    let (code, message) = refused(
        "send_prompt",
        serde_json::json!({"sessionId": "far", "host": "devbox", "text": "hi"}),
    );
    assert_eq!(code, "talk_refused");
    assert!(message.contains("runs on devbox"), "{message}");
    assert_eq!(
        got.lock().unwrap_or_else(|p| p.into_inner()).len(),
        2,
        "only the good send and the stop reached the agent"
    );
}

/// An alert's Reply on a server that takes no typed reply (dunst, GNOME): the window shows the
/// session with the keyboard in its reply field, told as an event to a page that listens and
/// kept for the catch-up of one that does not yet.
#[test]
fn an_alerts_reply_opens_the_window_at_the_sessions_reply_field() {
    let h = harness();
    let received: Arc<Mutex<Vec<FocusSession>>> = Arc::default();
    let sink = received.clone();
    h.app.listen_any(EVENT_FOCUS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<FocusSession>(event.payload()) {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(parsed);
        }
    });
    let memory = h
        .app
        .state::<agent_tray_desktop::window::WindowMemoryStore>();
    // The page is still starting: the request waits for its catch-up.
    memory.not_listening();
    let on_reply = agent_tray_desktop::notifier::reply_from_alert(h.app.handle());
    on_reply(local("s-done"), None);
    let caught_up = memory.take_listening();
    assert_eq!(caught_up.focus, Some(local("s-done")));
    assert!(caught_up.focus_reply, "the catch-up says: the reply field");
    // Listening now: told as an event.
    on_reply(local("s-done"), None);
    assert!(
        eventually(|| !received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()),
        "the window heard which session to show"
    );
    assert_eq!(
        *received.lock().unwrap_or_else(|p| p.into_inner()),
        [FocusSession {
            session_id: "s-done".into(),
            host: None,
            reply: true,
        }]
    );
}
