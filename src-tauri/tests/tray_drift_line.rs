//! Hook drift shows in the tray: the app's real menu builder, on the mock runtime, given the
//! engine's hook health for a recorded Claude Code install in a temp world. Intact hooks: no
//! line. Hooks removed from the file: "⚠ Claude Code hooks removed — Repair", whose click puts
//! them back through the install record.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_tray::hook_drift::{self, HookHealth};
use agent_tray::install::Action;
use agent_tray::model::Agent;
use agent_tray_desktop::hook_drift::DriftWatch;
use agent_tray_desktop::tray;
use tauri::test::MockRuntime;
use tauri::AppHandle;
use tokio::sync::watch;

const ID: &str = "repair-hooks:claude";

/// A recorded Claude Code install: (its folder, the tray's data folder, the hook binary).
fn installed(tmp: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dir = tmp.join("claude");
    let data = tmp.join("tray");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let bin = PathBuf::from("/opt/at/agent-tray");
    let file = dir.join("settings.json");
    let plan = agent_tray::agents::claude::install::plan_file(&file, &bin, Action::Install)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = plan.changes[0]
        .new
        .as_deref()
        .unwrap_or_else(|| panic!("no new text"));
    std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
    hook_drift::note(
        &data,
        Action::Install,
        hook_drift::InstalledHooks {
            agent: Agent::Claude,
            dir: dir.clone(),
            bin: bin.clone(),
            trust: false,
            at: chrono::Utc::now(),
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (dir, data, bin)
}

fn menu_line(app: &AppHandle<MockRuntime>) -> Option<String> {
    let (menu, _) = tray::build_menu(app, &[], None).unwrap_or_else(|e| panic!("{e}"));
    menu.get(ID)
        .and_then(|kind| kind.as_menuitem().cloned())
        .map(|item| item.text().unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn a_removed_hook_shows_a_repair_line_in_the_tray_whose_click_repairs_it() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (dir, data, bin) = installed(tmp.path());
    let check = || -> HookHealth { hook_drift::check(Agent::Claude, &dir, &bin, false, true) };
    let intact = check();
    assert!(!intact.drifted, "{intact:?}");

    let app = common::mock_app(tmp.path());
    let (health_tx, health_rx) = watch::channel(vec![intact]);
    tauri::Manager::manage(
        &app,
        DriftWatch {
            health: health_rx,
            data_dir: data.clone(),
        },
    );
    let handle = app.handle().clone();

    // Negative: hooks as install wrote them, no line.
    assert_eq!(menu_line(&handle), None, "intact hooks: no drift line");

    // The user's settings rewritten without our hooks: the engine publishes the drift.
    std::fs::write(dir.join("settings.json"), "{\n  \"model\": \"sonnet\"\n}\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let drifted = check();
    assert!(drifted.drifted, "{drifted:?}");
    health_tx.send_replace(vec![drifted]);
    assert_eq!(
        menu_line(&handle).as_deref(),
        Some("⚠ Claude Code hooks removed — Repair")
    );

    // The click runs the alert's repair: the hooks come back, the user's own key kept.
    tray::handle_menu_item(&handle, ID);
    let deadline = Instant::now() + Duration::from_secs(10);
    while check().drifted && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let repaired = check();
    assert!(!repaired.drifted && repaired.installed, "{repaired:?}");
    let text = std::fs::read_to_string(dir.join("settings.json")).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("\"model\": \"sonnet\""), "{text}");
    health_tx.send_replace(vec![repaired]);
    assert_eq!(menu_line(&handle), None, "repaired: the line goes");
}
