//! The app's side of the window host (`window_host`), against a scripted host: a real child
//! process on a real socket pair, which logs what the app sends it and sends what a host sends
//! (a page's calls, a window the user closed). The real host (WebKit) is the desktop e2e suite's.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray_desktop::window::{self, WindowPresence, MAIN};
use agent_tray_desktop::window_host::{self, WindowHost};
use agent_tray_desktop::{ipc, popover};
use tauri::{Emitter, Manager};

/// A host that logs every line it reads, answers a main window's opening with three calls (one
/// the app has, one with arguments the command does not take, one it does not have), closes a
/// popover at once (as a popover losing the focus does), and ends on `exit` or at the end of its
/// input, saying which. Started with `deaf`, it ignores both (a host stuck in its toolkit).
const SCRIPTED_HOST: &str = r#"
import json, os, sys, time
log = open(sys.argv[1], "a", buffering=1)
deaf = sys.argv[2:] == ["deaf"]
log.write("pid %d\n" % os.getpid())
def send(message):
    os.write(0, (json.dumps(message) + "\n").encode())
buffered = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        log.write("eof\n")
        if deaf:
            time.sleep(3600)
        sys.exit(0)
    buffered += chunk
    while b"\n" in buffered:
        line, buffered = buffered.split(b"\n", 1)
        message = json.loads(line)
        log.write(json.dumps(message) + "\n")
        if message["kind"] == "exit":
            log.write("exit\n")
            if deaf:
                continue
            sys.exit(0)
        if message["kind"] == "open" and message["label"] == "main" and message["scripts"]:
            send({"kind": "invoke", "id": 1, "command": "get_window_memory", "args": {}})
            send({"kind": "invoke", "id": 2, "command": "dismiss_session", "args": {"sessionId": 7}})
            send({"kind": "invoke", "id": 3, "command": "format_disk", "args": {}})
        if message["kind"] == "open" and message["label"] == "popover":
            send({"kind": "destroyed", "label": "popover"})
"#;

struct World {
    _dir: tempfile::TempDir,
    log: PathBuf,
    script: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("host.py");
    std::fs::write(&script, SCRIPTED_HOST).unwrap();
    World {
        log: dir.path().join("host.log"),
        script,
        _dir: dir,
    }
}

fn scripted(world: &World, keep_alive: bool) -> Arc<WindowHost> {
    scripted_with(world, keep_alive, &[])
}

fn scripted_with(world: &World, keep_alive: bool, extra: &[&str]) -> Arc<WindowHost> {
    let mut args = vec![
        world.script.display().to_string(),
        world.log.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    Arc::new(WindowHost::new(keep_alive).with_program(PathBuf::from("python3"), args))
}

/// SIGKILL by pid.
fn kill_hard(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

/// Ends a host the test started, whatever the test's outcome.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !gone(self.0) {
            kill_hard(self.0);
        }
    }
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn messages(log: &Path) -> Vec<serde_json::Value> {
    lines(log)
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn pids(log: &Path) -> Vec<i32> {
    lines(log)
        .iter()
        .filter_map(|l| l.strip_prefix("pid ")?.parse().ok())
        .collect()
}

fn reply(log: &Path, id: u64) -> Option<serde_json::Value> {
    messages(log)
        .into_iter()
        .find(|m| m["kind"] == "reply" && m["id"] == id)
}

fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn the_window_lives_in_a_host_that_runs_the_pages_calls_in_the_app_and_ends_with_its_last_window() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let app = common::mock_app(tmp.path());
    let host = scripted(&world, false);
    app.manage(host.clone());
    app.manage(window_host::page_calls::<tauri::test::MockRuntime>());
    window_host::forward_events(app.handle());
    let presence = app.state::<WindowPresence>().subscribe();

    window::show(app.handle());
    assert!(host.exists(MAIN) && host.is_shown(MAIN));
    assert!(
        *presence.borrow(),
        "the event bridge runs while the window is open"
    );

    // The window opens with the boot data (the snapshot) and is shown.
    wait_for("the host's calls answered", || {
        reply(&world.log, 3).is_some()
    });
    let open = messages(&world.log)
        .into_iter()
        .find(|m| m["kind"] == "open")
        .unwrap();
    assert_eq!(open["label"], "main");
    assert_eq!(open["show"], true);
    assert!(
        open["scripts"][0]
            .as_str()
            .unwrap()
            .starts_with("window.__agentTrayBoot = "),
        "{open}"
    );
    // A call runs the app's command: the window memory the app keeps.
    let memory = reply(&world.log, 1).unwrap();
    assert_eq!(memory["ok"], true, "{memory}");
    assert_eq!(memory["value"]["filter_text"], "", "{memory}");
    // Arguments the command does not take, and a command the app does not have: refused with
    // the code the page reads, never run.
    for id in [2, 3] {
        let refused = reply(&world.log, id).unwrap();
        assert_eq!(refused["ok"], false, "{refused}");
        assert_eq!(refused["value"]["code"], "bad_request", "{refused}");
    }

    // What the app emits for its pages reaches the host.
    app.emit(ipc::EVENT_OPEN_SETTINGS, ()).unwrap();
    wait_for("the event forwarded", || {
        messages(&world.log)
            .iter()
            .any(|m| m["kind"] == "event" && m["name"] == ipc::EVENT_OPEN_SETTINGS)
    });

    // The popover opens in the same host; closed there (it lost the focus), the app knows.
    popover::open(app.handle());
    wait_for("the popover gone", || !host.exists(popover::POPOVER));
    assert!(host.exists(MAIN));
    let first = pids(&world.log);
    assert_eq!(first.len(), 1, "one host for both windows: {first:?}");

    // Closing the last window ends the host: told to exit, reaped.
    window::close(app.handle());
    assert!(!host.exists(MAIN) && !host.any_window());
    assert!(!*presence.borrow(), "no window: the bridge sleeps");
    wait_for("the host told to exit", || {
        lines(&world.log).contains(&"exit".to_string())
    });
    wait_for("the host reaped", || gone(first[0]));

    // The next opening starts a new host with the window as the user left it.
    window::show(app.handle());
    wait_for("a second host", || pids(&world.log).len() == 2);
    let second = pids(&world.log)[1];
    assert_ne!(second, first[0]);
    window::close(app.handle());
    wait_for("the second host reaped", || gone(second));
}

#[test]
fn a_host_that_dies_leaves_no_window_behind_and_the_next_opening_starts_another() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let app = common::mock_app(tmp.path());
    let host = scripted(&world, false);
    app.manage(host.clone());
    app.manage(window_host::page_calls::<tauri::test::MockRuntime>());
    window::show(app.handle());
    wait_for("the host", || pids(&world.log).len() == 1);
    let pid = pids(&world.log)[0];
    // SIGKILL: no goodbye, only the end of its socket.
    kill_hard(pid);
    wait_for("the window known gone", || !host.exists(MAIN));
    assert!(!*app.state::<WindowPresence>().subscribe().borrow());
    wait_for("the dead host reaped", || gone(pid));
    window::show(app.handle());
    wait_for("a new host", || pids(&world.log).len() == 2);
    window::close(app.handle());
    let second = pids(&world.log)[1];
    wait_for("the new host reaped", || gone(second));
}

#[test]
fn under_webdriver_the_host_outlives_its_windows_and_a_prewarmed_window_is_dropped_unseen() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let app = common::mock_app(tmp.path());
    let host = scripted(&world, true);
    app.manage(host.clone());
    app.manage(window_host::page_calls::<tauri::test::MockRuntime>());
    // The tray menu opened: the window made hidden, then dropped when nobody chose it.
    window::prewarm(app.handle());
    assert!(host.exists(MAIN) && !host.is_shown(MAIN));
    window::drop_if_hidden(app.handle());
    assert!(!host.exists(MAIN));
    window::show(app.handle());
    window::close(app.handle());
    wait_for("the close sent", || {
        messages(&world.log)
            .iter()
            .filter(|m| m["kind"] == "close")
            .count()
            == 2
    });
    std::thread::sleep(Duration::from_millis(300));
    let log = lines(&world.log);
    assert!(!log.contains(&"exit".to_string()), "kept: {log:?}");
    let pid = pids(&world.log)[0];
    assert!(!gone(pid), "the host still runs");
    assert_eq!(pids(&world.log).len(), 1, "one host throughout");
    // The app's end (here: the host's link dropped by a kill of the host) is not the test's
    // subject; end it by its pid.
    kill_hard(pid);
    wait_for("the host reaped", || gone(pid));
}

#[test]
fn a_host_that_ignores_exit_is_killed_and_reaped_once_its_link_is_closed() {
    let world = world();
    let tmp = tempfile::tempdir().unwrap();
    let app = common::mock_app(tmp.path());
    let host = scripted_with(&world, false, &["deaf"]);
    app.manage(host.clone());
    app.manage(window_host::page_calls::<tauri::test::MockRuntime>());
    window::show(app.handle());
    wait_for("the host", || pids(&world.log).len() == 1);
    let pid = pids(&world.log)[0];
    let _ends = KillOnDrop(pid);
    window::close(app.handle());
    // Told to exit, and the link closed behind it: the host reads its end, and still runs.
    wait_for("the exit and the end of the link", || {
        let log = lines(&world.log);
        log.contains(&"exit".to_string()) && log.contains(&"eof".to_string())
    });
    assert!(!gone(pid), "it ignores both");
    // The app waits a few seconds for it, then kills it and reaps it: no host outlives its
    // link, and its memory goes with it.
    wait_for("the deaf host killed and reaped", || gone(pid));
    // The next opening starts a new host as ever.
    window::show(app.handle());
    wait_for("a new host", || pids(&world.log).len() == 2);
    let second = pids(&world.log)[1];
    let _ends_too = KillOnDrop(second);
    assert_ne!(second, pid);
}
