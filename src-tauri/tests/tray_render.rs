//! The tray re-renders from a background task while the user clicks its menu. Tauri runs every
//! tray and menu call on the main thread and waits for the answer, and the menu's click handler
//! runs on the main thread too: if a render held a lock across such a call while a click waited
//! for the same lock, neither would ever move again and the whole app would freeze.
//!
//! Here the mock runtime's event loop is the main thread: the renderer's real menu calls
//! (`MenuItem::set_text`) and the tray surface's calls round-trip through it exactly like the
//! real runtime's, and a click is kept queued on it the whole time, so every round trip of every
//! render waits behind a click. A watchdog ends the test binary with a failure if the renders do
//! not finish by the deadline (a deadlock cannot be unwound from inside).

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use agent_tray::model::{Agent, EventKind, Observation};
use agent_tray::registry::SessionsRegistry;
use agent_tray::tray_model::TrayStatus;
use agent_tray_desktop::ipc::{EngineStatus, FocusSession, EVENT_FOCUS};
use agent_tray_desktop::settings::SettingsStore;
use agent_tray_desktop::tray;
use tauri::test::{mock_builder, mock_context, noop_assets, MockRuntime};
use tauri::{AppHandle, Listener, Manager, WebviewWindowBuilder};

/// Renders while clicks are queued; each makes the icon and the row's label change.
const RENDERS: usize = 3;
/// The mock event loop handles one task a second: a render (its round trips, each behind a
/// click) takes about six seconds, the whole test about 20; a deadlock takes forever. The
/// watchdog fails the test when no render finishes for this long (progress, not a total time:
/// a run on a loaded machine once took over 90 s in all without being stuck).
const STALL: Duration = Duration::from_secs(60);

/// Runs nothing on the main thread and waits for it: the round trip every Tauri tray call makes.
fn round_trip(app: &AppHandle<MockRuntime>) -> tauri::Result<()> {
    let (tx, rx) = mpsc::channel();
    app.run_on_main_thread(move || {
        let _ = tx.send(());
    })?;
    rx.recv().map_err(|_| tauri::Error::FailedToReceiveMessage)
}

/// A tray icon whose calls go through the main thread, like [`tauri::tray::TrayIcon`]'s.
struct MainThreadTray {
    app: AppHandle<MockRuntime>,
    statuses: Mutex<Vec<TrayStatus>>,
}

impl tray::TraySurface<MockRuntime> for MainThreadTray {
    fn set_status(&self, status: TrayStatus) -> tauri::Result<()> {
        round_trip(&self.app)?;
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(status);
        Ok(())
    }

    fn set_title(&self, _title: &str) -> tauri::Result<()> {
        round_trip(&self.app)
    }

    fn set_menu(&self, _menu: tauri::menu::Menu<MockRuntime>) -> tauri::Result<()> {
        round_trip(&self.app)
    }
}

fn observe(registry: &SessionsRegistry, event: EventKind) {
    let obs = Observation::new("s1", Agent::Claude, event, chrono::Utc::now())
        .with_cwd(Some("/home/dev/api-server".into()));
    registry.observe(obs).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn clicking_the_menu_while_the_tray_renders_never_freezes_the_app() {
    let finished = Arc::new(AtomicBool::new(false));
    // Renders finished so far: the watchdog's measure of progress.
    let progress = Arc::new(AtomicUsize::new(0));
    let (watched, watched_progress) = (finished.clone(), progress.clone());
    std::thread::spawn(move || {
        let (mut seen, mut since) = (0, Instant::now());
        while since.elapsed() < STALL {
            if watched.load(Ordering::Acquire) {
                return;
            }
            let now = watched_progress.load(Ordering::Acquire);
            if now != seen {
                (seen, since) = (now, Instant::now());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Straight to stderr: the harness's capture of eprintln! dies with the process.
        let _ = writeln!(
            std::io::stderr(),
            "DEADLOCK: no tray render finished for {STALL:?} ({seen} of {RENDERS} done) while \
             the menu was clicked (a render holds a lock across a main-thread call?)"
        );
        std::process::exit(1);
    });

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let registry = Arc::new(SessionsRegistry::new());
    let (app, window, focused) = app_with_a_window(dir.path(), &registry);

    let handle = app.handle().clone();
    let surface = MainThreadTray {
        app: handle.clone(),
        statuses: Mutex::default(),
    };
    // The first render builds the menu's row before the loop runs (calls run inline then).
    observe(&registry, EventKind::SessionStart);
    observe(&registry, EventKind::UserPromptSubmit);
    tray::manage_menu(&handle);
    let mut menu = tray::TrayMenu::new();
    tray::render_on(&handle, &surface, &mut menu).unwrap_or_else(|e| panic!("first render: {e}"));

    // The mock runtime runs a main-thread task inline, on the caller's own thread, until its
    // event loop has started: the clicker and the renderer wait for the loop's `Ready`, or
    // nothing would queue behind anything (a run where they won the race saw one click).
    let loop_running = Arc::new((Mutex::new(false), Condvar::new()));
    let wait_for_loop = {
        let loop_running = loop_running.clone();
        move || {
            let (started, ready) = &*loop_running;
            let guard = started.lock().unwrap_or_else(|p| p.into_inner());
            let (guard, timeout) = ready
                .wait_timeout_while(guard, STALL, |started| !*started)
                .unwrap_or_else(|p| p.into_inner());
            assert!(
                *guard && !timeout.timed_out(),
                "the event loop never started"
            );
        }
    };

    // The user clicks the session's row, again and again: one click always waits in the queue.
    let stop = Arc::new(AtomicBool::new(false));
    let clicks = Arc::new(AtomicUsize::new(0));
    // Set once the clicker has stopped, with no click of its left on the main thread's queue.
    let clicker_done = Arc::new(AtomicBool::new(false));
    let clicker = {
        let (handle, stop, clicks, done) = (
            handle.clone(),
            stop.clone(),
            clicks.clone(),
            clicker_done.clone(),
        );
        let wait_for_loop = wait_for_loop.clone();
        std::thread::spawn(move || {
            wait_for_loop();
            while !stop.load(Ordering::Acquire) {
                let (tx, rx) = mpsc::channel();
                let (app, clicks) = (handle.clone(), clicks.clone());
                let queued = handle.run_on_main_thread(move || {
                    tray::handle_menu_item(&app, "session:0");
                    clicks.fetch_add(1, Ordering::AcqRel);
                    let _ = tx.send(());
                });
                if queued.is_err() || rx.recv().is_err() {
                    break;
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let renderer = {
        let (handle, registry, progress) = (handle.clone(), registry.clone(), progress.clone());
        std::thread::spawn(move || {
            wait_for_loop();
            let mut done = 0;
            for i in 0..RENDERS {
                // Working and needing permission in turn: a new icon and a relabelled row.
                let event = if i % 2 == 0 {
                    EventKind::PermissionRequest
                } else {
                    EventKind::UserPromptSubmit
                };
                observe(&registry, event);
                match tray::render_on(&handle, &surface, &mut menu) {
                    Ok(()) => done += 1,
                    Err(error) => eprintln!("render {i}: {error}"),
                }
                progress.fetch_add(1, Ordering::AcqRel);
            }
            stop.store(true, Ordering::Release);
            // The last click done first (a click shows the window), then closing the last
            // window ends the mock event loop (asked again if it fails).
            let deadline = Instant::now() + Duration::from_secs(10);
            while !clicker_done.load(Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            for _ in 0..100 {
                if window.destroy().is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            (done, surface.statuses.into_inner().unwrap_or_default())
        })
    };

    app.run(move |_, event| {
        if matches!(event, tauri::RunEvent::Ready) {
            let (started, ready) = &*loop_running;
            *started.lock().unwrap_or_else(|p| p.into_inner()) = true;
            ready.notify_all();
        }
    });
    finished.store(true, Ordering::Release);
    let (rendered, statuses) = renderer.join().unwrap_or_else(|_| panic!("renderer"));
    let _ = clicker.join();

    assert_eq!(rendered, RENDERS, "every render completed");
    assert_eq!(
        statuses,
        [
            TrayStatus::Working,
            TrayStatus::NeedsYou,
            TrayStatus::Working,
            TrayStatus::NeedsYou
        ],
        "each render changed the icon (a round trip to the main thread)"
    );
    // Positive control: the clicks really ran on the main thread between the renders' calls,
    // and found the session behind the row.
    assert!(
        clicks.load(Ordering::Acquire) >= RENDERS,
        "only {} clicks ran",
        clicks.load(Ordering::Acquire)
    );
    let focused = focused.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        !focused.is_empty() && focused.iter().all(|id| id == "s1"),
        "clicks showed the session: {focused:?}"
    );
}

/// A tray icon that counts the menus set on it (calls run inline: no event loop runs yet).
#[derive(Default)]
struct CountingTray {
    menus: AtomicUsize,
}

impl tray::TraySurface<MockRuntime> for CountingTray {
    fn set_status(&self, _status: TrayStatus) -> tauri::Result<()> {
        Ok(())
    }

    fn set_title(&self, _title: &str) -> tauri::Result<()> {
        Ok(())
    }

    fn set_menu(&self, _menu: tauri::menu::Menu<MockRuntime>) -> tauri::Result<()> {
        self.menus.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

#[test]
fn a_session_joining_a_full_menu_relabels_it_and_its_row_opens_that_session() {
    // Every hook that started a session rebuilt the whole menu, one item per session, on the
    // main thread that also carries the window's events: with 250 sessions a ~300 ms stall.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let registry = Arc::new(SessionsRegistry::new());
    let (app, _window, focused) = app_with_a_window(dir.path(), &registry);
    let handle = app.handle().clone();
    tray::manage_menu(&handle);
    let surface = CountingTray::default();
    let mut menu = tray::TrayMenu::new();
    let start = |id: &str| {
        let at = chrono::Utc::now();
        let obs = Observation::new(id, Agent::Claude, EventKind::SessionStart, at)
            .with_cwd(Some(format!("/home/dev/{id}")));
        registry.observe(obs).unwrap_or_else(|e| panic!("{e}"));
        // Each session's state starts after the previous one's (the clock's resolution).
        std::thread::sleep(Duration::from_millis(2));
    };
    let render = |menu: &mut tray::TrayMenu<MockRuntime>| {
        tray::render_on(&handle, &surface, menu).unwrap_or_else(|e| panic!("render: {e}"));
        surface.menus.load(Ordering::Acquire)
    };

    start("first");
    assert_eq!(render(&mut menu), 1, "the first row builds a menu");
    // Positive control: below the cap, a new row is a new item, so a rebuild.
    start("second");
    assert_eq!(render(&mut menu), 2, "a second row rebuilds the menu");
    for i in 0..40 {
        start(&format!("s{i:02}"));
    }
    assert_eq!(render(&mut menu), 3, "more rows, one rebuild");
    start("newest");
    assert_eq!(
        render(&mut menu),
        3,
        "a session joining a menu at its cap rebuilt it"
    );
    // The newest session has a row (the most recent are shown, oldest first: it is the last),
    // and a click on it opens that session.
    tray::handle_menu_item(
        &handle,
        &format!("session:{}", agent_tray::tray_model::MENU_ROWS_MAX - 1),
    );
    assert_eq!(
        *focused.lock().unwrap_or_else(|p| p.into_inner()),
        ["newest"],
        "the menu's last row is the newest session"
    );
}

/// The shell's state on `registry` in a mock app with its main window, and the session ids of
/// the focus events it emits, in order.
#[allow(clippy::type_complexity)]
fn app_with_a_window(
    dir: &std::path::Path,
    registry: &Arc<SessionsRegistry>,
) -> (
    tauri::App<MockRuntime>,
    tauri::WebviewWindow<MockRuntime>,
    Arc<Mutex<Vec<String>>>,
) {
    let app = mock_builder()
        .build(mock_context(noop_assets()))
        .unwrap_or_else(|e| panic!("{e}"));
    agent_tray_desktop::manage_state(
        &app,
        registry.clone(),
        Default::default(),
        SettingsStore::load(dir.join("settings.json")),
        EngineStatus::Running {
            socket: "/tmp/test.sock".into(),
        },
        dir.join("logs"),
    );
    let window = WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    // Its page has set its listeners and caught up (what the UI does as it starts): the shell
    // sends it requests as events.
    let _ = app
        .state::<agent_tray_desktop::window::WindowMemoryStore>()
        .take_listening();
    let focused: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = focused.clone();
    app.listen_any(EVENT_FOCUS, move |event| {
        if let Ok(parsed) = serde_json::from_str::<FocusSession>(event.payload()) {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(parsed.session_id);
        }
    });
    (app, window, focused)
}

/// A tray icon that keeps the last menu set on it, to read its items' ids as drawn.
#[derive(Default)]
struct KeepingTray {
    menu: Mutex<Option<tauri::menu::Menu<MockRuntime>>>,
}

impl tray::TraySurface<MockRuntime> for KeepingTray {
    fn set_status(&self, _status: TrayStatus) -> tauri::Result<()> {
        Ok(())
    }

    fn set_title(&self, _title: &str) -> tauri::Result<()> {
        Ok(())
    }

    fn set_menu(&self, menu: tauri::menu::Menu<MockRuntime>) -> tauri::Result<()> {
        *self.menu.lock().unwrap_or_else(|p| p.into_inner()) = Some(menu);
        Ok(())
    }
}

/// The (id, text) of every item of the menu on screen.
fn drawn_items(tray: &KeepingTray) -> Vec<(String, String)> {
    let menu = tray.menu.lock().unwrap_or_else(|p| p.into_inner());
    let menu = menu.as_ref().unwrap_or_else(|| panic!("no menu was drawn"));
    menu.items()
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .filter_map(|item| item.as_menuitem().cloned())
        .map(|item| {
            let text = item.text().unwrap_or_else(|e| panic!("{e}"));
            (item.id().as_ref().to_string(), text)
        })
        .collect()
}

/// A hook's permission request on session `id` (waiting for permission), as Claude asks it.
fn ask(
    registry: &SessionsRegistry,
    id: &str,
    call: &str,
    command: &str,
) -> (
    agent_tray::answering::RequestId,
    tokio::sync::oneshot::Receiver<agent_tray::registry::answers::Delivery>,
) {
    use agent_tray::registry::answers::AskOutcome;
    let obs = Observation::new(
        id,
        Agent::Claude,
        EventKind::PermissionRequest,
        chrono::Utc::now(),
    );
    let asked = common::ask_to_run(registry, obs, call, command, false);
    let AskOutcome::Waiting { id, decision, .. } = asked else {
        panic!("the request is open");
    };
    (id, decision)
}

/// Issue 37, point 2: the menu on screen shows session web's request (`touch a`) with its Allow.
/// Before the user clicks, the terminal answers it and the agent asks again (`touch b`); the menu
/// is drawn anew. The click on the Allow the user saw must not allow `touch b`, which was never
/// on screen beside it: items name their request, not a row position read against the newest
/// render.
#[test]
fn a_menu_allow_clicked_after_a_rebuild_never_answers_a_request_it_did_not_show() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let registry = Arc::new(SessionsRegistry::new());
    let (app, _window, _focused) = app_with_a_window(dir.path(), &registry);
    let handle = app.handle().clone();
    tray::manage_menu(&handle);
    let surface = KeepingTray::default();
    let mut menu = tray::TrayMenu::new();
    let render = |menu: &mut tray::TrayMenu<MockRuntime>| {
        tray::render_on(&handle, &surface, menu).unwrap_or_else(|e| panic!("render: {e}"));
    };
    for id in ["web", "api"] {
        let obs = Observation::new(
            id,
            Agent::Claude,
            EventKind::SessionStart,
            chrono::Utc::now(),
        )
        .with_cwd(Some(format!("/home/dev/{id}")));
        registry.observe(obs).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(2));
    }
    let (first, _first_decision) = ask(&registry, "web", "c1", "touch a");
    let (other, _other_decision) = ask(&registry, "api", "c2", "touch c");
    render(&mut menu);
    let seen = drawn_items(&surface);
    let allow_seen = seen
        .iter()
        .find(|(_, text)| text.contains("Allow") && text.contains("touch a"))
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("no Allow beside `touch a` in {seen:?}"));

    // The terminal answers `touch a` (the agent moves on), then the agent asks `touch b`.
    let moved_on = Observation::new(
        "web",
        Agent::Claude,
        EventKind::PostToolUse,
        chrono::Utc::now(),
    );
    registry.observe(moved_on).unwrap_or_else(|e| panic!("{e}"));
    let (newer, newer_decision) = ask(&registry, "web", "c3", "touch b");
    render(&mut menu);

    // The click lands on the Allow drawn beside `touch a`.
    tray::handle_menu_item(&handle, &allow_seen);
    std::thread::sleep(Duration::from_millis(500));
    let pending: Vec<_> = registry.pending().into_iter().map(|p| p.id).collect();
    assert!(
        pending.contains(&newer),
        "the Allow drawn beside `touch a` answered `touch b` ({newer}), never shown beside it; pending: {pending:?}"
    );
    assert!(
        pending.contains(&other),
        "it answered another session's request"
    );
    assert!(
        !pending.contains(&first),
        "`touch a` ended with the terminal's answer"
    );

    // The positive control: the Allow drawn beside `touch b` in the menu now answers it.
    let now = drawn_items(&surface);
    let allow_now = now
        .iter()
        .find(|(_, text)| text.contains("Allow") && text.contains("touch b"))
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("no Allow beside `touch b` in {now:?}"));
    tray::handle_menu_item(&handle, &allow_now);
    let delivery = tauri::async_runtime::block_on(async {
        tokio::time::timeout(Duration::from_secs(5), newer_decision).await
    })
    .unwrap_or_else(|_| panic!("the menu's Allow beside `touch b` reached no hook"))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        delivery.decision,
        agent_tray::answering::HookDecision::Allow
    );
}
