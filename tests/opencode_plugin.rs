//! Our OpenCode plugin, run by a real JavaScript runtime (node) the way OpenCode runs it: the file
//! `agent-tray install --opencode` wrote, its `event` hook fed bus events of the recorded shapes,
//! each forwarded through the real `agent-tray hook --agent opencode` to a real daemon.
//!
//! What it proves: asks and replies are paired by request id in the plugin, so two permission
//! asks answered one by one keep the session waiting until the last is answered, and a reply to
//! an id never asked changes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use common::{wait_until, World};

const SESSION: &str = "ses_dd1229c72ffen4TkoQjVFBx9Vv";

/// Reads bus events, one JSON line each, from stdin and hands them to the plugin's `event` hook
/// in order, as OpenCode's bus does.
const DRIVER: &str = r#"import { AgentTray } from "./agent-tray.mjs";
import readline from "node:readline";
const hooks = await AgentTray({ directory: process.argv[2] });
for await (const line of readline.createInterface({ input: process.stdin })) {
  await hooks.event({ event: JSON.parse(line) });
}
"#;

/// The plugin under node, and a count of the hook calls that finished.
struct PluginHost {
    child: Child,
    stdin: ChildStdin,
    delivered: std::path::PathBuf,
    sent: usize,
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
        common::write_executable(
            &wrapper,
            format!(
                "#!/bin/sh\n'{real}' \"$@\"\necho done >> '{}'\n",
                delivered.display()
            )
            .as_bytes(),
        );
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
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        for (k, v) in &w.envs {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the plugin (scripts/setup.sh installs nodejs)");
        let stdin = child.stdin.take().unwrap();
        PluginHost {
            child,
            stdin,
            delivered,
            sent: 0,
        }
    }

    /// Hands one event to the plugin and waits until its hook call finished.
    fn emit(&mut self, event: &str) {
        writeln!(self.stdin, "{event}").unwrap();
        self.stdin.flush().unwrap();
        self.sent += 1;
        let want = self.sent;
        let done = wait_until(Duration::from_secs(20), || {
            std::fs::read_to_string(&self.delivered)
                .map(|t| t.lines().count() >= want)
                .unwrap_or(false)
        });
        assert!(done.is_some(), "hook call {want} did not finish: {event}");
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
    host.emit(&ask("per_bash", "bash"));
    host.emit(&ask("per_edit", "edit"));
    wait_for(&w, "waiting_for_permission", Some("edit"));
    // The later one is answered first: the bash call still waits.
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
    // The last answer: the tool runs.
    host.emit(&reply("per_bash"));
    wait_for(&w, "working", None);
}
