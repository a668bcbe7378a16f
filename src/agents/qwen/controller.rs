//! Qwen Code's controller inbox: how `agent-tray send` gives a Qwen Code session its next prompt.
//!
//! Seen with 0.24.4 (the real binary in tmux against a loopback mock): every session writes
//! `~/.qwen/sessions/<pid>.json` with its `sessionId` and `ipcPath`, a unix socket (0600 in a 0700
//! folder). A program holding a **controller token** connects, writes `{"msgV":1,"type":"auth",
//! "token":…}` and `{"msgV":1,"msgId":…,"type":"user","toSessionId":…,"message":{"role":"user",
//! "content":TEXT},"from":…,"replyToken":…}`, one JSON line each, and half-closes. The session
//! writes nothing back on that connection: it connects to the `from` socket instead and says
//! `delivery_status` (`delivered`, `misaddressed`, `held`, `refused`, `dropped`, `expired`) for our
//! `msgId`. A bad token gets no answer at all. So a send listens on a socket of its own (0600 in a
//! 0700 folder of the engine's) and is done only when `delivered` comes back, within a bound.
//!
//! Why a token, and why it is the user's call: a controller's message starts a turn in the user's
//! session as if trusted, so the token is minted only by `agent-tray answering qwen --controller
//! on` (Qwen's own `qwen sessions controllers add`), kept in the data folder 0600, and revoked by
//! `--controller off`. What the model receives is Qwen's, not ours to change: the text inside a
//! `<cross_session_message … controller="Agent Tray">` envelope (a `<` in it escaped as `&lt;`),
//! with a note that a controller cannot answer prompts for the user; a leading `/` or `!` is text
//! there. Nothing in the inbox stops a turn, so `stop` has no way in here.

#[cfg(unix)]
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::model::Session;
use crate::talk_back::{DirectTalk, TalkFailure, TalkOrder, TalkRoute};

/// The token's file in the data folder (0600).
pub const TOKEN_FILE: &str = "qwen-controller.json";
/// The label Qwen shows the messages under ("Message from a trusted controller (Agent Tray)").
pub const LABEL: &str = "Agent Tray";
/// How long the session has to say it took the message.
#[cfg(unix)]
const ACK_BUDGET: Duration = Duration::from_secs(5);
/// The longest line read from the session (its acks are a few hundred bytes).
#[cfg(unix)]
const MAX_ACK_LINE: u64 = 64 * 1024;

/// The minted controller, as `qwen sessions controllers add --json` printed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Controller {
    pub id: String,
    #[serde(default)]
    pub label: String,
    pub token: String,
}

/// The session file's fields the inbox needs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub pid: u32,
    pub session_id: String,
    pub ipc_path: Option<String>,
}

/// Reads `~/.qwen/sessions/<pid>.json` under `qwen_home`.
pub fn session_record(qwen_home: &Path, pid: u32) -> Option<SessionRecord> {
    let text =
        std::fs::read_to_string(qwen_home.join("sessions").join(format!("{pid}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

/// The token's path, in this user's data folder.
pub fn token_path() -> Option<PathBuf> {
    crate::paths::TrayPaths::from_env()
        .ok()
        .map(|p| p.data_dir.join(TOKEN_FILE))
}

/// The minted controller, if the user turned the inbox on.
pub fn load_controller() -> Option<Controller> {
    let text = std::fs::read_to_string(token_path()?).ok()?;
    serde_json::from_str(&text).ok()
}

/// The message lines a send writes: the auth line and the user message.
pub fn message_lines(
    controller: &Controller,
    session_id: &str,
    msg_id: &str,
    text: &str,
    ack_socket: &Path,
    reply_token: &str,
) -> String {
    let auth = serde_json::json!({"msgV": 1, "type": "auth", "token": controller.token});
    let user = serde_json::json!({
        "msgV": 1, "msgId": msg_id, "type": "user", "toSessionId": session_id,
        "from": ack_socket.display().to_string(), "replyToken": reply_token,
        "message": {"role": "user", "content": text},
    });
    format!("{auth}\n{user}\n")
}

/// What the session said of our message, from the lines it wrote to our socket: `None` unless
/// the first line authenticates with our reply token and a `delivery_status` names our `msgId`.
pub fn read_verdict(lines: &[String], reply_token: &str, msg_id: &str) -> Option<(String, String)> {
    let auth: serde_json::Value = serde_json::from_str(lines.first()?).ok()?;
    if auth.get("type")?.as_str()? != "auth" || auth.get("token")?.as_str()? != reply_token {
        return None;
    }
    lines[1..].iter().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        (v.get("action")?.as_str()? == "delivery_status" && v.get("origMsgId")?.as_str()? == msg_id)
            .then(|| {
                let status = v.get("status").and_then(|s| s.as_str()).unwrap_or("");
                let reason = v.get("reason").and_then(|s| s.as_str()).unwrap_or("");
                (status.to_string(), reason.to_string())
            })
    })
}

/// The inbox as a way in ([`DirectTalk`]).
pub struct ControllerInbox;

impl DirectTalk for ControllerInbox {
    fn route(&self) -> TalkRoute {
        TalkRoute::ControllerInbox
    }

    fn takes(&self, order: &TalkOrder) -> bool {
        matches!(order, TalkOrder::Send { prompt } if !prompt.command())
    }

    fn reaches(&self, session: &Session) -> bool {
        let (Some(pid), Some(home)) = (session.pid, qwen_home()) else {
            return false;
        };
        load_controller().is_some()
            && session_record(&home, pid).is_some_and(|r| {
                r.session_id == session.session_id && r.pid == pid && r.ipc_path.is_some()
            })
    }

    fn carry_out(&self, session: &Session, order: &TalkOrder) -> Result<(), TalkFailure> {
        let TalkOrder::Send { prompt } = order else {
            return Err(TalkFailure::Refused(
                "Qwen Code's inbox cannot stop a turn; nothing was sent".into(),
            ));
        };
        let controller = load_controller().ok_or_else(|| {
            TalkFailure::Refused(
                "Qwen Code's inbox is off here (`agent-tray answering qwen --controller on`)"
                    .into(),
            )
        })?;
        let home = qwen_home().ok_or_else(|| TalkFailure::Refused("no home folder".into()))?;
        let pid = session.pid.unwrap_or(0);
        let record = session_record(&home, pid)
            .filter(|r| r.session_id == session.session_id)
            .ok_or_else(|| {
                TalkFailure::Refused(format!(
                    "Qwen Code's session file for process {pid} is gone or names another \
                     session; nothing was sent"
                ))
            })?;
        let ipc = PathBuf::from(record.ipc_path.unwrap_or_default());
        send_and_wait(&controller, &record.session_id, &ipc, prompt.as_str())
    }
}

fn qwen_home() -> Option<PathBuf> {
    crate::agents::adapter_of(crate::model::Agent::Qwen).config_dir()
}

#[cfg(unix)]
fn send_and_wait(
    controller: &Controller,
    session_id: &str,
    ipc: &Path,
    text: &str,
) -> Result<(), TalkFailure> {
    use std::os::unix::net::{UnixListener, UnixStream};
    let not_sent = |why: String| TalkFailure::Refused(format!("{why}; nothing was sent"));
    crate::control::client::check_socket_owner(ipc)
        .map_err(|e| not_sent(format!("Qwen Code's inbox socket is not trusted: {e}")))?;
    // Our socket for the session's answer, in a folder only we can enter.
    let folder = tempfile::Builder::new()
        .prefix("agent-tray-qwen-")
        .tempdir()
        .map_err(|e| not_sent(format!("cannot make a socket folder: {e}")))?;
    crate::os_fs::make_owner_only(folder.path(), true)
        .map_err(|e| not_sent(format!("cannot make a socket folder private: {e}")))?;
    let ack_path = folder.path().join("ack.sock");
    let listener =
        UnixListener::bind(&ack_path).map_err(|e| not_sent(format!("cannot listen: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| not_sent(format!("cannot listen: {e}")))?;
    let stamp = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
    let msg_id = format!("agenttray-{}-{stamp}", std::process::id());
    let reply_token = format!("{:x}{:x}", stamp, std::process::id() ^ 0x5a5a_5a5a);
    let lines = message_lines(
        controller,
        session_id,
        &msg_id,
        text,
        &ack_path,
        &reply_token,
    );
    let mut stream = UnixStream::connect(ipc).map_err(|e| {
        not_sent(format!(
            "cannot reach Qwen Code's inbox at {}: {e}",
            ipc.display()
        ))
    })?;
    let _ = stream.set_write_timeout(Some(ACK_BUDGET));
    let _ = stream.set_read_timeout(Some(ACK_BUDGET));
    stream
        .write_all(lines.as_bytes())
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write))
        .map_err(|e| {
            TalkFailure::NotDelivered(format!("writing to Qwen Code's inbox failed: {e}"))
        })?;
    // The session closes its end once it read the message; nothing else comes on it.
    let _ = (&mut stream)
        .take(MAX_ACK_LINE)
        .read_to_end(&mut Vec::new());
    let deadline = Instant::now() + ACK_BUDGET;
    while Instant::now() < deadline {
        match listener.accept() {
            Ok((conn, _)) => {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let lines: Vec<String> = BufReader::new(conn.take(MAX_ACK_LINE))
                    .lines()
                    .map_while(Result::ok)
                    .collect();
                let Some((status, reason)) = read_verdict(&lines, &reply_token, &msg_id) else {
                    continue;
                };
                return match status.as_str() {
                    "delivered" => Ok(()),
                    _ => Err(TalkFailure::NotDelivered(format!(
                        "Qwen Code did not take it ({status}): {reason}"
                    ))),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                return Err(TalkFailure::NotDelivered(format!(
                    "waiting for Qwen Code's word failed: {e}"
                )))
            }
        }
    }
    Err(TalkFailure::NotDelivered(format!(
        "Qwen Code did not say within {} s whether it took it (a wrong controller token gets no \
         answer: `agent-tray answering qwen --controller on` mints a new one); not retried",
        ACK_BUDGET.as_secs()
    )))
}

#[cfg(not(unix))]
fn send_and_wait(_: &Controller, _: &str, _: &Path, _: &str) -> Result<(), TalkFailure> {
    Err(TalkFailure::Refused(
        "Qwen Code's inbox is a unix socket: not on this system".into(),
    ))
}

/// Mints a controller token with Qwen's own command (`qwen sessions controllers add --label
/// "Agent Tray" --json`) and keeps it 0600; one left from before under our label is removed
/// first (its token was lost with our file). Returns the controller's id.
pub fn turn_on() -> Result<String, String> {
    if let Some(c) = load_controller() {
        return Ok(c.id);
    }
    let program = crate::catalogue::entry(crate::model::Agent::Qwen).program;
    let run = |args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {program} (is Qwen Code installed? npm install -g @qwen-code/qwen-code): {e}"))
    };
    let listed = run(&["sessions", "controllers", "list", "--json"])?;
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v.get("label").and_then(|l| l.as_str()) == Some(LABEL) {
            if let Some(id) = v.get("id").and_then(|i| i.as_str()) {
                let _ = run(&["sessions", "controllers", "remove", id]);
            }
        }
    }
    let added = run(&["sessions", "controllers", "add", "--label", LABEL, "--json"])?;
    if !added.status.success() {
        return Err(format!(
            "`{program} sessions controllers add` failed: {}",
            String::from_utf8_lossy(&added.stderr).trim()
        ));
    }
    let controller: Controller = serde_json::from_slice(&added.stdout).map_err(|e| {
        format!("`{program} sessions controllers add --json` printed no controller: {e}")
    })?;
    let path = token_path().ok_or("no data folder")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let bytes = serde_json::to_vec(&controller).map_err(|e| e.to_string())?;
    crate::atomic_file::AtomicWrite::new(&path)
        .new_file_mode(0o600)
        .write(&bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(controller.id)
}

/// Revokes our controller in Qwen (`controllers remove`) and forgets its token.
pub fn turn_off() -> Result<bool, String> {
    let Some(controller) = load_controller() else {
        return Ok(false);
    };
    let program = crate::catalogue::entry(crate::model::Agent::Qwen).program;
    let _ = std::process::Command::new(program)
        .args(["sessions", "controllers", "remove", &controller.id])
        .stdin(std::process::Stdio::null())
        .output();
    if let Some(path) = token_path() {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller() -> Controller {
        Controller {
            id: "c_1".into(),
            label: LABEL.into(),
            token: "qpc_abc".into(),
        }
    }

    #[test]
    fn a_send_is_an_auth_line_and_one_user_message_with_where_to_answer() {
        let text = message_lines(
            &controller(),
            "s-1",
            "m1",
            "two\nlines <b>",
            Path::new("/r/ack.sock"),
            "rt",
        );
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_default())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            serde_json::json!({"msgV": 1, "type": "auth", "token": "qpc_abc"})
        );
        assert_eq!(lines[1]["toSessionId"], "s-1");
        assert_eq!(lines[1]["message"]["content"], "two\nlines <b>");
        assert_eq!(lines[1]["from"], "/r/ack.sock");
        assert_eq!(lines[1]["replyToken"], "rt");
    }

    #[test]
    fn only_a_verdict_behind_our_reply_token_for_our_message_counts() {
        let auth = r#"{"msgV":1,"type":"auth","token":"rt"}"#.to_string();
        let ours = r#"{"msgV":1,"type":"control","action":"delivery_status","status":"delivered","origMsgId":"m1","reason":"ok"}"#.to_string();
        let other = ours.replace("m1", "m2");
        assert_eq!(
            read_verdict(&[auth.clone(), other.clone(), ours.clone()], "rt", "m1"),
            Some(("delivered".into(), "ok".into()))
        );
        assert_eq!(read_verdict(&[auth.clone(), other], "rt", "m1"), None);
        let forged = r#"{"msgV":1,"type":"auth","token":"guess"}"#.to_string();
        assert_eq!(read_verdict(&[forged, ours], "rt", "m1"), None);
        assert_eq!(read_verdict(&[], "rt", "m1"), None);
    }

    #[test]
    fn a_session_file_as_qwen_writes_it_is_read() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(home.path().join("sessions")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            home.path().join("sessions/2950.json"),
            r#"{"schemaVersion":1,"pid":2950,"procStart":"f8:1","pidNs":4026531836,"sessionId":"a78f","cwd":"/p","name":"p-20","startedAt":1,"qwenVersion":"0.24.4","kind":"tui","ipcPath":"/tmp/qwen-socks-x/2950.sock","ipcToken":"7c88"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let record = session_record(home.path(), 2950).unwrap_or_else(|| panic!("parsed"));
        assert_eq!(record.session_id, "a78f");
        assert_eq!(
            record.ipc_path.as_deref(),
            Some("/tmp/qwen-socks-x/2950.sock")
        );
        assert_eq!(session_record(home.path(), 1), None);
    }
}
