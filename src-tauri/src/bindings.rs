//! The UI's TypeScript types, generated from the Rust types that cross the IPC boundary.
//!
//! `ui/src/bindings.ts` is committed. The test below renders the bindings and fails when the
//! committed file differs, so a change to a Rust type that the UI does not know about breaks the
//! build (the desktop test suite runs in CI). To regenerate after an intended change:
//! `UPDATE_BINDINGS=1 cargo test -p agent-tray-desktop bindings`.
//!
//! Beside the types it writes a few constants the UI must not spell itself: the agents and
//! their names, the window's sections and their titles (from the core), and the event names.

use agent_tray::model::{Agent, EndReason, Session, SessionState};
use agent_tray::notify_policy::{AlertKind, NotifySettings};
use agent_tray::store::views::{
    DayReport, HistoryEntry, HourBucket, KeyedSplit, LongWait, SessionDetail, TimeSplit,
    TimelineInterval, WaitWhy,
};
use agent_tray::tray_model::{Section, SessionView, TrayStatus};
use agent_tray::window_rows::{agents, sections, AgentInfo, SectionInfo};
use ts_rs::TS;

use crate::ipc::{
    AnswerChoice, AnswerFrom, AppSettings, CommandError, EngineStatus, ErrorCode, FocusSession,
    HistoryQuery, InstallReport, SessionEvent, Snapshot, WindowMemory, EVENT_FOCUS,
    EVENT_INSTALL_RESULT, EVENT_OPEN_SETTINGS, EVENT_SESSIONS, EVENT_SETTINGS,
};

fn render() -> String {
    let decls = [
        Agent::decl(),
        SessionState::decl(),
        EndReason::decl(),
        Session::decl(),
        agent_tray::model::SessionKey::decl(),
        agent_tray::answering::RequestId::decl(),
        agent_tray::answering::Accepts::decl(),
        agent_tray::answering::AskDetail::decl(),
        agent_tray::answering::SessionGrant::decl(),
        agent_tray::answering::GrantItem::decl(),
        agent_tray::answering::GrantKind::decl(),
        agent_tray::answering::ShownRequest::decl(),
        agent_tray::answering::ShownQuestion::decl(),
        agent_tray::answering::ShownOption::decl(),
        agent_tray::answering::RequestKind::decl(),
        agent_tray::answering::Question::decl(),
        agent_tray::answering::QuestionOption::decl(),
        agent_tray::answering::QuestionAnswer::decl(),
        agent_tray::answering::PendingView::decl(),
        AnswerChoice::decl(),
        agent_tray::answering::EffectiveChoice::decl(),
        AnswerFrom::decl(),
        Section::decl(),
        agent_tray::tray_model::ContextView::decl(),
        agent_tray::plan_limits::PlanWindow::decl(),
        SessionView::decl(),
        TrayStatus::decl(),
        AlertKind::decl(),
        NotifySettings::decl(),
        AppSettings::decl(),
        EngineStatus::decl(),
        Snapshot::decl(),
        SessionEvent::decl(),
        FocusSession::decl(),
        WindowMemory::decl(),
        InstallReport::decl(),
        ErrorCode::decl(),
        CommandError::decl(),
        AgentInfo::decl(),
        SectionInfo::decl(),
        agent_tray::remote::LinkState::decl(),
        agent_tray::remote::RemoteLinkStatus::decl(),
        HistoryQuery::decl(),
        TimeSplit::decl(),
        HourBucket::decl(),
        KeyedSplit::decl(),
        WaitWhy::decl(),
        LongWait::decl(),
        DayReport::decl(),
        TimelineInterval::decl(),
        SessionDetail::decl(),
        agent_tray::store::requests::RequestRecord::decl(),
        agent_tray::store::requests::AnswerCounts::decl(),
        HistoryEntry::decl(),
    ];
    let json = |value: serde_json::Value| value.to_string();
    let constants = [
        format!(
            "const AGENTS: AgentInfo[] = {};",
            json(serde_json::json!(agents()))
        ),
        format!(
            "const SECTIONS: SectionInfo[] = {};",
            json(serde_json::json!(sections()))
        ),
        format!(
            "const STATE_LABELS: Record<SessionState, string> = {};",
            json(serde_json::Value::Object(
                agent_tray::model::SessionState::ALL
                    .iter()
                    .map(|s| {
                        (
                            s.as_str().to_string(),
                            serde_json::json!(agent_tray::tray_model::state_label(*s)),
                        )
                    })
                    .collect(),
            ))
        ),
        format!(
            "const ANSWER_PLACES: Record<string, string> = {};",
            json(serde_json::Value::Object(
                agent_tray::store::requests::PLACE_NAMES
                    .iter()
                    .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                    .collect(),
            ))
        ),
        format!(
            "const REQUEST_OUTCOMES: Record<string, string> = {};",
            json(serde_json::Value::Object(
                agent_tray::store::requests::OUTCOME_NAMES
                    .iter()
                    .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                    .collect(),
            ))
        ),
        format!(
            "const LIMITS = {} as const;",
            json(serde_json::json!({
                "historyDaysDefault": agent_tray::store::DEFAULT_RETENTION_DAYS,
                "historyDaysMax": agent_tray::store::MAX_RETENTION_DAYS,
                "sessionTtlSecsDefault": agent_tray::registry::DEFAULT_SESSION_TTL.as_secs(),
                "sessionTtlSecsMax": agent_tray::env_knobs::MAX_SESSION_TTL.as_secs(),
            }))
        ),
        format!(
            "const EVENTS = {} as const;",
            json(serde_json::json!({
                "sessions": EVENT_SESSIONS,
                "focus": EVENT_FOCUS,
                "settings": EVENT_SETTINGS,
                "openSettings": EVENT_OPEN_SETTINGS,
                "installResult": EVENT_INSTALL_RESULT,
                "limits": crate::limits::EVENT_LIMITS,
            }))
        ),
    ];
    let mut out = String::from(
        "// Generated from the Rust types by src-tauri/src/bindings.rs. Do not edit by hand:\n\
         // UPDATE_BINDINGS=1 cargo test -p agent-tray-desktop bindings\n\n",
    );
    for decl in decls.into_iter().chain(constants) {
        out.push_str("export ");
        out.push_str(&decl);
        out.push_str("\n\n");
    }
    out.trim_end().to_string() + "\n"
}

#[test]
fn the_committed_typescript_bindings_match_the_rust_types() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings.ts");
    let fresh = render();
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "ui/src/bindings.ts is stale: a type crossing to the UI changed. Regenerate it with \
         `UPDATE_BINDINGS=1 cargo test -p agent-tray-desktop bindings` and adapt the UI."
    );
}
