//! The tray menu's "Waiting on you today" line is read from the history store when the menu is
//! built: here a real store file, a session that waited on the user 35 minutes today, and the
//! app's real menu builder on the mock runtime.

mod common;

use agent_tray::model::{Agent, EndReason, Session, SessionState};
use agent_tray::registry::SessionChange;
use agent_tray::store::{HistoryStore, Record};
use agent_tray_desktop::history::HistoryStorePath;
use agent_tray_desktop::tray;
use chrono::{DateTime, TimeDelta, Timelike, Utc};
use tauri::test::MockRuntime;
use tauri::AppHandle;

fn line(app: &AppHandle<MockRuntime>) -> (String, bool) {
    let (menu, _) = tray::build_menu(app, &[], None).unwrap_or_else(|e| panic!("{e}"));
    let item = menu
        .get(tray::WAITING_TODAY_ID)
        .and_then(|kind| kind.as_menuitem().cloned())
        .unwrap_or_else(|| panic!("the menu has no {} item", tray::WAITING_TODAY_ID));
    (
        item.text().unwrap_or_else(|e| panic!("{e}")),
        item.is_enabled().unwrap_or_else(|e| panic!("{e}")),
    )
}

fn change(at: DateTime<Utc>, session: Session) -> Record {
    Record::Change {
        at,
        change: SessionChange::Changed {
            old_state: SessionState::Idle,
            session,
        },
    }
}

#[test]
fn the_tray_menu_shows_todays_waiting_on_you_total_from_the_store() {
    // A zone where it is now about noon, so "today" holds the last hour whatever the real time.
    let now = Utc::now().with_nanosecond(0).unwrap_or_else(Utc::now);
    let offset = 12 - i64::from(now.hour());
    let zone = match offset {
        0 => "Etc/GMT".to_string(),
        // POSIX signs: Etc/GMT-5 is five hours ahead of UTC.
        n if n > 0 => format!("Etc/GMT-{n}"),
        n => format!("Etc/GMT+{}", -n),
    };
    std::env::set_var("TZ", &zone);

    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store_path = agent_tray::store::store_path(dir.path());
    let app = common::mock_app(dir.path());
    tauri::Manager::manage(&app, HistoryStorePath(store_path.clone()));
    let handle = app.handle().clone();

    let (text, enabled) = line(&handle);
    assert_eq!(
        text, "Waiting on you today: <1m",
        "no store yet: nothing waited"
    );
    assert!(!enabled, "a line to read, not an action");

    let mut session = Session::new("w", Agent::Claude, SessionState::Working, now);
    session.cwd = Some("/home/dev/shop".into());
    let start = now - TimeDelta::minutes(50);
    let mut waiting = session.clone();
    waiting.state = SessionState::WaitingForInput;
    let mut ended = session.clone();
    ended.state = SessionState::Ended;
    ended.end_reason = Some(EndReason::SessionEnd);
    {
        let mut store = HistoryStore::open(&store_path).unwrap_or_else(|e| panic!("{e}"));
        store
            .apply(&[
                change(start, session.clone()),
                change(start + TimeDelta::minutes(10), waiting),
                change(start + TimeDelta::minutes(45), ended),
            ])
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let (text, _) = line(&handle);
    assert_eq!(text, "Waiting on you today: 35m", "in {zone}");
}
