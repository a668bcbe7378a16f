//! Our OpenCode plugin, run by a real JavaScript runtime (node) the way OpenCode runs it: the file
//! `agent-tray install --opencode` wrote, its `event` hook fed bus events of the recorded shapes,
//! each forwarded through the real `agent-tray hook --agent opencode` to a real daemon.
//!
//! What it proves: asks and replies are paired by request id in the plugin, so two permission
//! asks answered one by one keep the session waiting until the last is answered, and a reply to
//! an id never asked changes nothing; and a request answered from the tray reaches OpenCode's
//! own reply API (a recording client here; the real OpenCode in tests/e2e), while one answered
//! in the terminal ends the plugin's wait.

// Runs the plugin under node with a shell-free unix harness; OpenCode's Windows side is
// type-checked only (no node under Wine here).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::Write as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use common::{wait_until, World};

const SESSION: &str = "ses_dd1229c72ffen4TkoQjVFBx9Vv";

/// Reads bus events, one JSON line each, from stdin and hands them to the plugin's `event` hook
/// in order, as OpenCode's bus does.
/// OpenCode's SDK client, recording each reply call to `$REPLIES`, one JSON line each.
const DRIVER: &str = r#"import { AgentTray } from "./agent-tray.mjs";
import readline from "node:readline";
import { appendFileSync } from "node:fs";
const client = {
  postSessionIdPermissionsPermissionId: async (req) => {
    appendFileSync(process.env.REPLIES, JSON.stringify(req) + "\n");
    return { data: true };
  },
  // The raw client the v1 SDK wraps: the question routes go through it.
  _client: {
    post: async (req) => {
      appendFileSync(process.env.REPLIES, JSON.stringify(req) + "\n");
      return { data: true };
    },
  },
};
const hooks = await AgentTray({ directory: process.argv[2], client });
for await (const line of readline.createInterface({ input: process.stdin })) {
  await hooks.event({ event: JSON.parse(line) });
}
"#;

/// The plugin under node, and a count of the hook calls that finished.
struct PluginHost {
    child: Child,
    stdin: ChildStdin,
    delivered: std::path::PathBuf,
    replies: std::path::PathBuf,
    sent: usize,
    /// Asks whose hooks still wait for an answer (not counted as finished).
    open: usize,
}

impl PluginHost {
    fn start(w: &World) -> PluginHost {
        let out = w.run(&["install", "--opencode", "--allow-insecure-path"]);
        assert!(out.status.success(), "{out:?}");
        let plugin = w.path().join("home/.config/opencode/plugins/agent-tray.js");
        let text = std::fs::read_to_string(&plugin).unwrap();
        // The plugin as written, its binary wrapped so the test knows when a hook call is done.
        let dir = w.path().join("host");
        std::fs::create_dir_all(&dir).unwrap();
        let delivered = dir.join("delivered");
        let wrapper = dir.join("agent-tray-counted");
        let real = common::bin().display().to_string();
        // The hook in the background (its stdin kept), so the plugin's kill of a waiting hook
        // reaches the real one.
        common::write_executable(
            &wrapper,
            format!(
                "#!/bin/sh\nexec 3<&0\n'{real}' \"$@\" <&3 3<&- &\npid=$!\ntrap 'kill $pid 2>/dev/null' TERM\nwait $pid; wait $pid\necho done >> '{}'\n",
                delivered.display()
            )
            .as_bytes(),
        );
        let replies = dir.join("replies");
        let quoted = |p: &str| serde_json::to_string(p).unwrap();
        let bin_line = format!("const BIN = {};", quoted(&real));
        assert!(text.contains(&bin_line), "the plugin names this binary");
        let text = text.replace(
            &bin_line,
            &format!("const BIN = {};", quoted(&wrapper.display().to_string())),
        );
        std::fs::write(dir.join("agent-tray.mjs"), text).unwrap();
        std::fs::write(dir.join("driver.mjs"), DRIVER).unwrap();
        let mut cmd = Command::new("node");
        cmd.arg(dir.join("driver.mjs"))
            .arg("/home/dev/proj")
            .current_dir(&dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REPLIES", &replies);
        for (k, v) in &w.envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_retrying()
            .expect("node runs the plugin (scripts/setup.sh installs nodejs)");
        let stdin = child.stdin.take().unwrap();
        PluginHost {
            child,
            stdin,
            delivered,
            replies,
            sent: 0,
            open: 0,
        }
    }

    /// Hands one event to the plugin and waits until its hook call finished.
    fn emit(&mut self, event: &str) {
        self.send(event);
        self.wait_done();
    }

    /// Hands one event to the plugin, without waiting.
    fn send(&mut self, event: &str) {
        writeln!(self.stdin, "{event}").unwrap();
        self.stdin.flush().unwrap();
        self.sent += 1;
    }

    /// Hands a permission ask to the plugin: its hook waits for an answer.
    fn ask(&mut self, event: &str) {
        self.send(event);
        self.open += 1;
    }

    /// `n` asks were answered (anywhere): their hooks end.
    fn answered(&mut self, n: usize) {
        self.open -= n;
    }

    /// Waits until every hook call but the open asks' finished.
    fn wait_done(&mut self) {
        let want = self.sent - self.open;
        let done = wait_until(Duration::from_secs(20), || {
            std::fs::read_to_string(&self.delivered)
                .map(|t| t.lines().count() >= want)
                .unwrap_or(false)
        });
        assert!(done.is_some(), "hook call {want} did not finish");
    }

    /// The reply calls the plugin made to OpenCode's API.
    fn replies(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.replies)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for PluginHost {
    fn drop(&mut self) {
        common::signal(self.child.id(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

fn ask(id: &str, tool: &str) -> String {
    format!(
        r#"{{"type":"permission.asked","properties":{{"id":"{id}","sessionID":"{SESSION}","permission":"{tool}","patterns":["echo hi"],"metadata":{{"command":"echo hi"}},"always":["echo *"],"tool":{{"messageID":"msg_1","callID":"call_{id}"}}}}}}"#
    )
}

fn reply(id: &str) -> String {
    format!(
        r#"{{"type":"permission.replied","properties":{{"sessionID":"{SESSION}","requestID":"{id}","reply":"once"}}}}"#
    )
}

fn field(w: &World, key: &str) -> Option<String> {
    w.session(SESSION)
        .and_then(|s| s[key].as_str().map(str::to_string))
}

fn wait_for(w: &World, state: &str, waiting_for: Option<&str>) {
    let seen = wait_until(Duration::from_secs(10), || {
        (field(w, "state").as_deref() == Some(state)
            && (waiting_for.is_none() || field(w, "waiting_for").as_deref() == waiting_for))
            .then_some(())
    });
    assert!(
        seen.is_some(),
        "wanted {state} {waiting_for:?}, the session is {:?}",
        w.session(SESSION)
    );
}

#[test]
fn two_asks_answered_one_by_one_keep_the_session_waiting_until_the_last_answer() {
    if Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        panic!("node is required (scripts/setup.sh installs nodejs)");
    }
    let w = World::new();
    let _daemon = w.start_daemon();
    let mut host = PluginHost::start(&w);
    host.emit(&format!(
        r#"{{"type":"session.created","properties":{{"info":{{"id":"{SESSION}","directory":"/home/dev/proj","title":"New session"}}}}}}"#
    ));
    host.emit(&format!(
        r#"{{"type":"session.status","properties":{{"sessionID":"{SESSION}","status":{{"type":"busy"}}}}}}"#
    ));
    wait_for(&w, "working", None);
    // The model called two tools at once: OpenCode asks for both.
    host.ask(&ask("per_bash", "bash"));
    host.ask(&ask("per_edit", "edit"));
    wait_for(&w, "waiting_for_permission", Some("edit"));
    // The later one is answered first: the bash call still waits.
    host.answered(1);
    host.emit(&reply("per_edit"));
    wait_for(&w, "waiting_for_permission", Some("bash"));
    // A reply to a request never asked (or answered already) changes nothing: the title event
    // sent after it shows it was handled, and the session still waits.
    host.emit(&reply("per_never_asked"));
    host.emit(&reply("per_edit"));
    host.emit(&format!(
        r#"{{"type":"session.created","properties":{{"info":{{"id":"{SESSION}","directory":"/home/dev/proj","title":"after the stray replies"}}}}}}"#
    ));
    wait_until(Duration::from_secs(10), || {
        (field(&w, "title").as_deref() == Some("after the stray replies")).then_some(())
    })
    .expect("the title event arrived");
    assert_eq!(
        field(&w, "state").as_deref(),
        Some("waiting_for_permission"),
        "{:?}",
        w.session(SESSION)
    );
    // The last answer: the tool runs; both asking hooks ended (their waits were over).
    host.answered(1);
    host.emit(&reply("per_bash"));
    wait_for(&w, "working", None);
    host.wait_done();
}

fn run_ok(w: &World, args: &[&str]) -> String {
    let out = w.run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pending(w: &World) -> Vec<serde_json::Value> {
    serde_json::from_str(&run_ok(w, &["pending", "--json"])).unwrap()
}

#[test]
fn a_request_answered_from_the_tray_reaches_opencodes_api_and_one_answered_in_the_terminal_ends_the_wait(
) {
    let w = World::new();
    let _daemon = w.start_daemon();
    let mut host = PluginHost::start(&w);
    host.emit(&format!(
        r#"{{"type":"session.created","properties":{{"info":{{"id":"{SESSION}","directory":"/home/dev/proj","title":"New session"}}}}}}"#
    ));
    // Allowed from the CLI: the plugin replies "once" for that request of that session.
    host.ask(&ask("per_a", "bash"));
    let shown = wait_until(Duration::from_secs(10), || pending(&w).into_iter().next())
        .expect("the request is pending");
    assert_eq!(shown["session_id"], SESSION);
    assert_eq!(shown["command"], "echo hi", "what will run, shown: {shown}");
    assert_eq!(shown["tool"], "bash");
    // What OpenCode's "always" would allow, in words, before anyone chooses it.
    assert_eq!(
        shown["for_session"],
        serde_json::json!({"items": [{"kind": "patterns", "text": "allow `bash` calls matching `echo *` for this session"}], "withheld": null}),
        "{shown}"
    );
    assert_eq!(shown["accepts"]["allow_for_session"], true);
    // An allow names the request read, by its id (a session id is refused).
    let refused = w.run(&["allow", SESSION]);
    assert!(!refused.status.success());
    run_ok(&w, &["allow", shown["id"].as_str().unwrap()]);
    host.answered(1);
    host.wait_done();
    wait_until(Duration::from_secs(5), || !host.replies().is_empty()).expect("a reply call");
    let replies = host.replies();
    assert_eq!(
        replies,
        vec![
            serde_json::json!({"path": {"id": SESSION, "permissionID": "per_a"}, "body": {"response": "once"}})
        ]
    );
    // OpenCode then says it was replied: the tool runs.
    host.emit(&reply("per_a"));
    wait_for(&w, "working", None);

    // Denied: "reject". Allowed for the session: OpenCode's "always".
    host.ask(&ask("per_b", "bash"));
    wait_until(Duration::from_secs(10), || !pending(&w).is_empty()).expect("pending");
    run_ok(&w, &["deny", SESSION]);
    host.answered(1);
    host.wait_done();
    // OpenCode says "replied" once the plugin called its API.
    wait_until(Duration::from_secs(5), || host.replies().len() == 2).expect("a reply call");
    host.emit(&reply("per_b"));
    host.ask(&ask("per_c", "bash"));
    let asked =
        wait_until(Duration::from_secs(10), || pending(&w).into_iter().next()).expect("pending");
    run_ok(
        &w,
        &["allow", asked["id"].as_str().unwrap(), "--for-session"],
    );
    host.answered(1);
    host.wait_done();
    let three = wait_until(Duration::from_secs(5), || host.replies().len() == 3);
    assert!(three.is_some(), "three reply calls: {:?}", host.replies());
    host.emit(&reply("per_c"));
    let responses: Vec<String> = host
        .replies()
        .iter()
        .map(|r| format!("{} {}", r["path"]["permissionID"], r["body"]["response"]))
        .collect();
    assert_eq!(
        responses,
        [
            r#""per_a" "once""#,
            r#""per_b" "reject""#,
            r#""per_c" "always""#
        ]
    );

    // Answered in the terminal: the tray's request is gone within a second, the waiting hook
    // ended, and nothing was sent to OpenCode's API.
    host.ask(&ask("per_d", "bash"));
    wait_until(Duration::from_secs(10), || !pending(&w).is_empty()).expect("pending");
    let answered = std::time::Instant::now();
    host.answered(1);
    host.send(&reply("per_d"));
    let gone = wait_until(Duration::from_secs(5), || pending(&w).is_empty());
    assert!(gone.is_some(), "the request stayed: {:?}", pending(&w));
    let took = answered.elapsed();
    assert!(took < Duration::from_secs(1), "gone after {took:?}");
    host.wait_done();
    assert_eq!(host.replies().len(), 3, "{:?}", host.replies());
}

fn question(id: &str) -> String {
    format!(
        r#"{{"type":"question.asked","properties":{{"id":"{id}","sessionID":"{SESSION}","questions":[{{"question":"Which database?","header":"DB","options":[{{"label":"Postgres","description":"a server"}},{{"label":"SQLite","description":"a file"}}],"multiple":false}},{{"question":"Which caches?","header":"Caches","options":[{{"label":"Redis"}},{{"label":"Memcached"}}],"multiple":true}}],"tool":{{"messageID":"msg_1","callID":"call_{id}"}}}}}}"#
    )
}

// OpenCode's question tool (1.18.33's `question.asked`): listed with its questions, answered from
// the tray through the plugin's client (`/question/{id}/reply` with the labels per question),
// declined (`/question/{id}/reject`), and answered in the terminal (the wait ends, nothing sent).
#[test]
fn a_question_answered_from_the_tray_reaches_opencodes_question_route() {
    let w = World::new();
    let _daemon = w.start_daemon();
    let mut host = PluginHost::start(&w);
    host.emit(&format!(
        r#"{{"type":"session.created","properties":{{"info":{{"id":"{SESSION}","directory":"/home/dev/proj","title":"New session"}}}}}}"#
    ));
    host.ask(&question("que_a"));
    let shown = wait_until(Duration::from_secs(10), || pending(&w).into_iter().next())
        .expect("the question is pending");
    assert_eq!(shown["kind"], "question", "{shown}");
    assert_eq!(shown["questions"][1]["multi_select"], true, "{shown}");
    assert_eq!(shown["questions"][0]["allows_other"], true, "{shown}");
    assert_eq!(shown["questions"][0]["options"][1]["label"], "SQLite");
    let id = shown["id"].as_str().unwrap().to_string();
    let wrong = w.run(&[
        "answer",
        &id,
        "--choice",
        "MySQL",
        "--question",
        "2",
        "--choice",
        "Redis",
    ]);
    assert!(!wrong.status.success());
    run_ok(
        &w,
        &[
            "answer",
            &id,
            "--choice",
            "SQLite",
            "--question",
            "2",
            "--choice",
            "Redis",
            "--choice",
            "Memcached",
        ],
    );
    host.answered(1);
    host.wait_done();
    wait_until(Duration::from_secs(5), || !host.replies().is_empty()).expect("a reply call");
    assert_eq!(
        host.replies(),
        vec![
            serde_json::json!({"url": "/question/{requestID}/reply", "path": {"requestID": "que_a"},
            "body": {"answers": [["SQLite"], ["Redis", "Memcached"]]}})
        ]
    );
    host.emit(&format!(
        r#"{{"type":"question.replied","properties":{{"sessionID":"{SESSION}","requestID":"que_a"}}}}"#
    ));
    // Declined: OpenCode's reject route.
    host.ask(&question("que_b"));
    let asked =
        wait_until(Duration::from_secs(10), || pending(&w).into_iter().next()).expect("pending");
    run_ok(&w, &["deny", asked["id"].as_str().unwrap()]);
    host.answered(1);
    host.wait_done();
    wait_until(Duration::from_secs(5), || host.replies().len() == 2).expect("a reject call");
    assert_eq!(
        host.replies()[1],
        serde_json::json!({"url": "/question/{requestID}/reject", "path": {"requestID": "que_b"}})
    );
    host.emit(&format!(
        r#"{{"type":"question.rejected","properties":{{"sessionID":"{SESSION}","requestID":"que_b"}}}}"#
    ));
    // Answered in the terminal: gone within a second, nothing sent.
    host.ask(&question("que_c"));
    wait_until(Duration::from_secs(10), || !pending(&w).is_empty()).expect("pending");
    let answered = std::time::Instant::now();
    host.answered(1);
    host.send(&format!(
        r#"{{"type":"question.replied","properties":{{"sessionID":"{SESSION}","requestID":"que_c"}}}}"#
    ));
    let gone = wait_until(Duration::from_secs(5), || pending(&w).is_empty());
    assert!(gone.is_some(), "the question stayed: {:?}", pending(&w));
    assert!(answered.elapsed() < Duration::from_secs(1));
    host.wait_done();
    assert_eq!(host.replies().len(), 2, "{:?}", host.replies());
}
