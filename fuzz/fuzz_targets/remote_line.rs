//! One line from a remote's `watch` stream: another machine, possibly compromised, prints it.
//! Whatever it sends, a line parses to at most the caps (sessions, requests per session), every
//! session it yields is labelled with this link's host (never one it names itself), every id is
//! one the socket would take, and a request it carries offers no answer shape and carries no
//! tool input.
#![no_main]

use agent_tray::model::{validate_session_id, Session};
use agent_tray::remote::wire::{parse_line, RemoteLine, MAX_REMOTE_PENDING, MAX_REMOTE_SESSIONS};
use libfuzzer_sys::fuzz_target;

fn check(session: &Session) {
    assert_eq!(session.host.as_deref(), Some("devbox"), "a remote named its own host");
    assert!(validate_session_id(&session.session_id).is_ok(), "a bad id was taken");
    assert!(session.pending.len() <= MAX_REMOTE_PENDING, "too many requests");
    for request in &session.pending {
        assert_eq!(request.session_id, session.session_id, "a request of another session");
        assert_eq!(request.host.as_deref(), Some("devbox"), "a request without this host");
        assert!(request.detail.input.is_empty(), "a remote's tool input was kept");
        assert!(!request.accepts.allow_for_session && !request.accepts.deny_message);
    }
}

fuzz_target!(|data: &[u8]| {
    match parse_line(data, "devbox") {
        Ok(RemoteLine::Snapshot { live, ended, .. }) => {
            assert!(live.len() <= MAX_REMOTE_SESSIONS && ended.len() <= MAX_REMOTE_SESSIONS);
            live.iter().chain(&ended).for_each(check);
        }
        Ok(RemoteLine::Resync(sessions)) => {
            assert!(sessions.len() <= MAX_REMOTE_SESSIONS);
            sessions.iter().for_each(check);
        }
        Ok(RemoteLine::Upsert(session)) => check(&session),
        Ok(RemoteLine::Removed(id)) => assert!(validate_session_id(&id).is_ok()),
        Ok(RemoteLine::Nothing) | Err(_) => {}
    }
});
