//! Plan windows show in the tray: the app's real menu builder, on the mock runtime, given the
//! engine's plan-limits book. No window reported: no line. A window reported: one line with its
//! percent and time to reset, whose click opens the window; a window past its reset: gone.

mod common;

use std::sync::Arc;

use agent_tray::model::Agent;
use agent_tray::plan_limits::{PlanLimitsBook, PlanWindow};
use agent_tray_desktop::limits::LimitsState;
use agent_tray_desktop::tray;
use tauri::test::MockRuntime;
use tauri::AppHandle;

fn limit_lines(app: &AppHandle<MockRuntime>) -> Vec<String> {
    let (menu, _) = tray::build_menu(app, &[], None).unwrap_or_else(|e| panic!("{e}"));
    (0..4)
        .filter_map(|i| menu.get(&format!("{}{i}", tray::LIMIT_ID_PREFIX)))
        .filter_map(|kind| kind.as_menuitem().cloned())
        .map(|item| item.text().unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn each_reported_plan_window_is_a_menu_line_until_it_resets() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let app = common::mock_app(tmp.path());
    let handle = app.handle().clone();
    // No engine book managed (no engine here): nothing, and nothing breaks.
    assert_eq!(limit_lines(&handle), Vec::<String>::new());
    let book = Arc::new(PlanLimitsBook::default());
    tauri::Manager::manage(&app, LimitsState(book.clone()));
    assert_eq!(limit_lines(&handle), Vec::<String>::new(), "none reported");

    let now = chrono::Utc::now();
    let window = |name: &str, used: f64, resets_at| PlanWindow {
        agent: Agent::Codex,
        host: None,
        account: "pro".into(),
        window: name.into(),
        window_minutes: None,
        used_percent: used,
        resets_at,
        seen_at: now,
        session_id: "t1".into(),
    };
    book.apply(vec![
        window("5h", 42.5, Some(now + chrono::Duration::minutes(95))),
        window("weekly", 12.0, None),
        window("old", 99.0, Some(now - chrono::Duration::minutes(1))),
    ]);
    let lines = limit_lines(&handle);
    assert_eq!(
        lines.len(),
        2,
        "a window past its reset is not shown: {lines:?}"
    );
    assert!(
        lines[0] == "Codex 5h: 42% used · resets in 1h 35m"
            || lines[0] == "Codex 5h: 42% used · resets in 1h 34m",
        "{lines:?}"
    );
    assert_eq!(lines[1], "Codex weekly: 12% used");
    // A click opens the window (no window exists on the mock runtime: it must not panic).
    tray::handle_menu_item(&handle, &format!("{}0", tray::LIMIT_ID_PREFIX));
}
