//! Remotes end to end, against a real OpenSSH server (see `common/sshd.rs`): a remote host's
//! `agent-tray daemon` (another private world), reached by the local engine's own `ssh` child.

// A real sshd on loopback and unix shells on the far side: the remote link from Windows
// (ssh.exe) is type-checked only.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;
#[path = "common/sshd.rs"]
mod sshd;
#[path = "common/waiting_hook.rs"]
mod waiting_hook;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::{wait_until, World};
use serde_json::Value;
use sshd::{SshKeys, Sshd};

/// Deadline for anything to cross the link (the machine is loaded; loopback is fast).
const CROSS: Duration = Duration::from_secs(20);

/// The environment sshd gives the remote host's sessions: its world, and a PATH with (or
/// without) `agent-tray`.
fn remote_env(remote: &World, with_agent_tray: bool) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = remote.envs.clone();
    let path = if with_agent_tray {
        format!("{}:/usr/bin:/bin", sshd::bin_dir().display())
    } else {
        "/usr/bin:/bin".to_string()
    };
    env.push(("PATH".into(), path));
    env
}

/// A local world whose engine uses the test's ssh config.
fn local_world(keys: &SshKeys) -> World {
    World::new().with_env(
        "AGENT_TRAY_SSH_CONFIG",
        &keys.client_config.display().to_string(),
    )
}

/// A dev box running Agent Tray headless behind a real sshd, and this machine's engine linked
/// to it as the remote `devbox`. Dropped: both engines, then the server.
struct DevBox {
    remote: World,
    remote_daemon: common::Daemon,
    server: Sshd,
    local: World,
    local_daemon: common::Daemon,
}

fn dev_box() -> DevBox {
    let remote = World::new();
    let remote_daemon = remote.start_daemon();
    let keys = SshKeys::new(&remote.path().join("ssh"));
    let port = sshd::free_port();
    keys.add_host("devbox", port);
    let server = Sshd::start(&keys, "devbox", port, &remote_env(&remote, true));
    let local = local_world(&keys);
    let added = run_ok(&local, &["remote", "add", "devbox", "devbox"]);
    assert!(added.contains("added remote devbox"), "{added}");
    let local_daemon = local.start_daemon();
    DevBox {
        remote,
        remote_daemon,
        server,
        local,
        local_daemon,
    }
}

fn remote_session<'a>(list: &'a [Value], host: &str, id: &str) -> Option<&'a Value> {
    list.iter()
        .find(|s| s["session_id"] == id && s["host"] == host)
}

fn wait_for(local: &World, what: &str, mut ok: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
    wait_until(CROSS, || {
        let list = local.list();
        ok(&list).then_some(list)
    })
    .unwrap_or_else(|| {
        panic!(
            "{what}: not seen within {CROSS:?}; list: {:#?}",
            local.list()
        )
    })
}

fn run_ok(world: &World, args: &[&str]) -> String {
    let out = world.run(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_remote_session_appears_moves_ends_and_a_cut_link_is_unreachable_then_reconciled() {
    // The developer's dev box runs Agent Tray headless; the laptop adds it as a remote.
    let DevBox {
        remote,
        remote_daemon: _remote_daemon,
        mut server,
        local,
        local_daemon,
    } = dev_box();

    // Appears, with its host, beside a local session that has none.
    remote.observe(&[
        "--session",
        "r-1",
        "--event",
        "SessionStart",
        "--cwd",
        "/srv/api",
    ]);
    local.observe(&["--session", "l-1", "--event", "SessionStart"]);
    let list = wait_for(&local, "the remote session", |l| {
        remote_session(l, "devbox", "r-1").is_some()
    });
    let local_one = list.iter().find(|s| s["session_id"] == "l-1").unwrap();
    assert!(local_one["host"].is_null(), "a local session has host null");
    assert!(local_one["unreachable_since"].is_null());

    // Moves through its states, with the remote's own times.
    for (event, extra, state) in [
        ("UserPromptSubmit", None, "working"),
        ("PermissionRequest", Some("Bash"), "waiting_for_permission"),
        ("Stop", None, "idle"),
    ] {
        let mut args = vec!["--session", "r-1", "--event", event];
        if let Some(tool) = extra {
            args.extend(["--tool", tool]);
        }
        remote.observe(&args);
        wait_for(&local, state, |l| {
            remote_session(l, "devbox", "r-1").is_some_and(|s| s["state"] == state)
        });
    }
    let there = remote.session("r-1").unwrap();
    let here = local.session("r-1").unwrap();
    assert_eq!(
        here["state_since"], there["state_since"],
        "remote times kept"
    );
    assert_eq!(here["started_at"], there["started_at"]);

    // The link is cut: sshd and everything under it killed.
    server.kill();
    let list = wait_for(&local, "unreachable", |l| {
        remote_session(l, "devbox", "r-1").is_some_and(|s| !s["unreachable_since"].is_null())
    });
    let cut = remote_session(&list, "devbox", "r-1").unwrap();
    assert_eq!(cut["state"], "idle", "unreachable is not ended: {cut}");
    assert!(cut["end_reason"].is_null());
    let status = run_ok(&local, &["remote", "list"]);
    assert!(status.contains("unreachable since"), "{status}");
    let doctor = local.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(
        doctor.contains("remote devbox (devbox): unreachable since"),
        "{doctor}"
    );

    // Meanwhile on the dev box: r-1 ends, r-2 starts.
    remote.observe(&["--session", "r-1", "--event", "SessionEnd"]);
    remote.observe(&["--session", "r-2", "--event", "SessionStart"]);

    server.restart();
    let list = wait_for(&local, "reconciled", |l| {
        remote_session(l, "devbox", "r-2").is_some()
            && remote_session(l, "devbox", "r-1").is_some_and(|s| s["state"] == "ended")
    });
    let r1 = remote_session(&list, "devbox", "r-1").unwrap();
    assert_eq!(r1["end_reason"], "session_end", "the remote's end reason");
    assert!(r1["unreachable_since"].is_null());
    let r2 = remote_session(&list, "devbox", "r-2").unwrap();
    assert!(r2["unreachable_since"].is_null());
    let ids: Vec<&str> = list
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 3, "nothing duplicated: {ids:?}");
    // The ended one leaves after its linger, like a local one.
    wait_for(&local, "r-1 gone after its linger", |l| {
        remote_session(l, "devbox", "r-1").is_none()
    });
    let log = std::fs::read_to_string(local.path().join("daemon.log")).unwrap_or_default();
    assert!(log.contains("remote_connected"), "{log}");
    drop(local_daemon);
    drop(server);
}

#[test]
fn a_remote_without_agent_tray_gets_one_clear_error_and_no_retry_storm() {
    let remote = World::new();
    let keys = SshKeys::new(&remote.path().join("ssh"));
    let port = sshd::free_port();
    keys.add_host("bare", port);
    let server = Sshd::start(&keys, "bare", port, &remote_env(&remote, false));
    let local = local_world(&keys);
    run_ok(&local, &["remote", "add", "bare", "bare"]);
    let _daemon = local.start_daemon();
    let status = wait_until(CROSS, || {
        let text = run_ok(&local, &["remote", "list"]);
        text.contains("not installed on bare").then_some(text)
    })
    .unwrap_or_else(|| panic!("no clear error: {}", run_ok(&local, &["remote", "list"])));
    assert_eq!(status.lines().count(), 1, "one line: {status}");
    let doctor = local.run(&["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout).into_owned();
    let lines: Vec<&str> = doctor
        .lines()
        .filter(|l| l.contains("remote bare"))
        .collect();
    assert_eq!(lines.len(), 1, "{doctor}");
    assert!(
        lines[0].starts_with('✗') && lines[0].contains("not installed"),
        "{doctor}"
    );
    // No storm: over several backoff periods of an unreachable remote (1 s, 2 s, 4 s) the
    // server saw one login. Positive control: a reload (what `remote add` sends) retries now.
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(server.logins(), 1, "{}", server.log_text());
    run_ok(&local, &["remote", "add", "other", "bare"]);
    wait_until(CROSS, || server.logins() >= 3)
        .unwrap_or_else(|| panic!("a reload retries: {}", server.log_text()));
    let log = std::fs::read_to_string(local.path().join("daemon.log")).unwrap_or_default();
    assert!(log.contains("remote_link_down"), "{log}");
}

/// A real hook run, as an agent runs it.
fn hook(world: &World, payload: &Value) {
    let mut child = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || child.try_wait().unwrap());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(status.is_some_and(|s| s.success()), "the hook exits 0");
}

fn observe_many(world: &World, prefix: &str, n: usize) {
    let mut children: Vec<_> = (0..n)
        .map(|i| {
            world
                .command(&[
                    "observe",
                    "--session",
                    &format!("{prefix}-{i:02}"),
                    "--event",
                    "UserPromptSubmit",
                    "--cwd",
                    &format!("/srv/{prefix}/{i}"),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn_retrying()
                .unwrap()
        })
        .collect();
    for child in &mut children {
        let status = wait_until(Duration::from_secs(30), || child.try_wait().unwrap());
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(status.is_some_and(|s| s.success()));
    }
}

#[test]
fn two_remotes_and_this_machine_with_50_sessions_each_do_not_cross_talk() {
    let alpha = World::new();
    let beta = World::new();
    let _alpha_daemon = alpha.start_daemon();
    let _beta_daemon = beta.start_daemon();
    let keys = SshKeys::new(&alpha.path().join("ssh"));
    let (pa, pb) = (sshd::free_port(), sshd::free_port());
    keys.add_host("alpha", pa);
    keys.add_host("beta", pb);
    let _sa = Sshd::start(&keys, "alpha", pa, &remote_env(&alpha, true));
    let _sb = Sshd::start(&keys, "beta", pb, &remote_env(&beta, true));
    let local = local_world(&keys);
    let _local_daemon = local.start_daemon();
    // Added while the engine runs: it connects at once.
    run_ok(&local, &["remote", "add", "alpha", "alpha"]);
    run_ok(&local, &["remote", "add", "beta", "beta"]);

    observe_many(&alpha, "a", 50);
    observe_many(&beta, "b", 50);
    observe_many(&local, "l", 50);
    // The same id on both remotes and here: three sessions, told apart by host.
    for world in [&alpha, &beta, &local] {
        world.observe(&["--session", "same-1", "--event", "SessionStart"]);
    }
    // A real hook on this machine while both links stream.
    hook(
        &local,
        &serde_json::json!({
            "session_id": "hooked-1", "hook_event_name": "UserPromptSubmit",
            "cwd": "/home/dev/app", "prompt": "hi"
        }),
    );
    let list = wait_for(&local, "153 + 1 sessions", |l| l.len() == 154);
    for (host, prefix) in [("alpha", "a"), ("beta", "b")] {
        let mine: Vec<&Value> = list.iter().filter(|s| s["host"] == host).collect();
        assert_eq!(mine.len(), 51, "{host}");
        for s in &mine {
            let id = s["session_id"].as_str().unwrap();
            assert!(
                id.starts_with(&format!("{prefix}-")) || id == "same-1",
                "{host} holds {id}"
            );
            if id != "same-1" {
                assert_eq!(s["state"], "working");
                assert!(s["cwd"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("/srv/{prefix}/")));
            }
        }
    }
    let here: Vec<&Value> = list.iter().filter(|s| s["host"].is_null()).collect();
    assert_eq!(here.len(), 52);
    assert!(here
        .iter()
        .all(|s| s["session_id"].as_str().unwrap().starts_with("l-")
            || s["session_id"] == "same-1"
            || s["session_id"] == "hooked-1"));
    let hooked = here.iter().find(|s| s["session_id"] == "hooked-1").unwrap();
    assert_eq!(hooked["state"], "working", "local hooks unaffected");

    // A change on alpha reaches alpha's copy only.
    alpha.observe(&["--session", "same-1", "--event", "Stop"]);
    let list = wait_for(&local, "alpha's same-1 idle", |l| {
        remote_session(l, "alpha", "same-1").is_some_and(|s| s["state"] == "idle")
    });
    assert_eq!(
        remote_session(&list, "beta", "same-1").unwrap()["state"],
        "starting"
    );
    let local_same = list
        .iter()
        .find(|s| s["session_id"] == "same-1" && s["host"].is_null())
        .unwrap();
    assert_eq!(local_same["state"], "starting");

    // Removing a remote takes its sessions away and leaves the rest.
    run_ok(&local, &["remote", "remove", "beta"]);
    let list = wait_for(&local, "beta's sessions gone", |l| l.len() == 103);
    assert!(list.iter().all(|s| s["host"] != "beta"));
}

#[test]
fn watch_json_says_its_protocol_and_refuses_one_it_does_not_speak() {
    // What a remote link reads first: the snapshot line, now with the protocol and version.
    let world = World::new();
    let _daemon = world.start_daemon();
    world.observe(&["--session", "s-1", "--event", "SessionStart"]);
    let mut watch = world
        .command(&["watch", "--json", "--protocol", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        let _ = tx.send(line);
    });
    let first = rx.recv_timeout(CROSS).expect("a snapshot line");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["kind"], "snapshot");
    assert_eq!(first["protocol"], 1);
    assert!(first["version"].is_string());
    assert!(
        first["ended"].is_array(),
        "a link's snapshot carries the ended ones"
    );
    assert_eq!(first["sessions"][0]["session_id"], "s-1");
    assert!(first["sessions"][0]["host"].is_null());
    // The reader went away (the thread dropped the pipe): the watch ends by itself, although
    // nothing changed that it would have written.
    let gone = wait_until(Duration::from_secs(10), || watch.try_wait().unwrap());
    if gone.is_none() {
        let _ = watch.kill();
        let _ = watch.wait();
    }
    assert!(
        gone.is_some(),
        "a remote watch whose reader went away must end"
    );

    let refused = world.run(&["watch", "--json", "--protocol", "2"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("remote protocol 2 is not spoken here"),
        "{err}"
    );
}

#[test]
fn remote_names_and_destinations_are_checked_before_they_are_kept() {
    let world = World::new();
    let bad = world.run(&["remote", "add", "box", "--", "-oProxyCommand=touch /tmp/x"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an ssh destination"));
    let bad = world.run(&["remote", "add", "<b>box</b>", "box"]);
    assert!(!bad.status.success());
    // Positive control: a good one is kept, listed, and removed.
    run_ok(&world, &["remote", "add", "box", "dev@box.example"]);
    let listed = run_ok(&world, &["remote", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["destination"], "dev@box.example");
    assert!(listed[0]["link"].is_null(), "no engine runs");
    run_ok(&world, &["remote", "remove", "box"]);
    assert!(run_ok(&world, &["remote", "list"]).starts_with("No remotes"));
}

/// Issue 25: a remote's permission request answered here goes over the link's own ssh to that
/// machine's `agent-tray`, which takes it only where its own user allows answers over ssh (off
/// by default). The answer's text crosses two shells and arrives word for word.
#[test]
fn a_remote_request_is_answered_over_ssh_only_where_that_machine_allows_it() {
    use waiting_hook::{decision, pending, WaitingHook};
    let linked = dev_box();
    let (remote, local) = (&linked.remote, &linked.local);

    // Claude on the dev box asks; its hook waits there. Here the request shows with its host.
    let mut hook = WaitingHook::start(remote, "r-ask", "touch /tmp/made");
    let request = wait_until(CROSS, || {
        pending(local)
            .into_iter()
            .find(|r| r["session_id"] == "r-ask" && r["host"] == "devbox")
    })
    .unwrap_or_else(|| panic!("the remote request here: {:?}", pending(local)));
    let id = request["id"].as_str().unwrap().to_string();

    // Off by default there: refused with how to turn it on, and the hook still waits.
    let out = local.run(&["allow", &id]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {said}");
    assert!(said.contains("on devbox:"), "{said}");
    assert!(
        said.contains("agent-tray answering --over-ssh on"),
        "{said}"
    );
    assert!(hook.still_waiting(), "a refused answer reaches no hook");

    // The dev box's user allows it there. A deny whose message every shell would mangle if it
    // were not quoted reaches the hook word for word.
    let on = run_ok(remote, &["answering", "--over-ssh", "on"]);
    assert!(on.contains("allowed here"), "{on}");
    let message = "it's \"not\" $(whoami) `id` safe; -x \\";
    let out = local.run(&["deny", &id, "--message", message]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let told = String::from_utf8_lossy(&out.stdout);
    assert!(told.starts_with("on devbox: denied"), "{told}");
    let (printed, _) = hook.finish(CROSS);
    let decision = decision(&printed);
    assert_eq!(decision["behavior"], "deny");
    assert_eq!(decision["message"], message);

    // Gone from both machines' lists.
    wait_until(CROSS, || {
        pending(local)
            .iter()
            .all(|r| r["session_id"] != "r-ask")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("still pending here: {:?}", pending(local)));
    assert!(pending(remote).is_empty());
    // One hop only: a remote cannot be asked to pass an answer on.
    let out = remote.run(&["allow", "r9-none", "--over-ssh"]);
    assert!(!out.status.success());
}

/// Ends a child by its pid when dropped (a failed assertion included).
struct Ended(std::process::Child);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_remote_session_is_sent_a_prompt_over_ssh_only_where_that_machine_allows_it() {
    use std::io::BufRead;
    let linked = dev_box();
    let (remote, local) = (&linked.remote, &linked.local);

    // On the dev box, an OpenCode process whose plugin holds a way in (`agent-tray inbox`); this
    // test plays the plugin: it reads the orders and answers them.
    let agent = Ended(
        std::process::Command::new("sleep")
            .arg("120")
            .stdin(Stdio::null())
            .spawn_retrying()
            .unwrap(),
    );
    let pid = agent.0.id().to_string();
    let mut relay = Ended(
        remote
            .command(&["inbox", "--agent", "opencode", "--pid", &pid])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn_retrying()
            .unwrap(),
    );
    run_ok(
        remote,
        &[
            "observe",
            "--session",
            "r-talk",
            "--event",
            "Stop",
            "--agent",
            "opencode",
            "--pid",
            &pid,
        ],
    );
    wait_for(local, "the remote's idle session here", |l| {
        remote_session(l, "devbox", "r-talk").is_some_and(|s| s["state"] == "idle")
    });
    let text = "it's \"not\" $(whoami) `id` safe;\n-x \\ and a second line";

    // Off by default there: refused with how to turn it on, and nothing reaches the plugin.
    let out = local.run(&["send", "r-talk", text]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {said}");
    assert!(said.contains("on devbox:"), "{said}");
    assert!(said.contains("answering --over-ssh on"), "{said}");

    // Allowed there: the text crosses on ssh's standard input, never on a command line, and
    // reaches the plugin word for word.
    run_ok(remote, &["answering", "--over-ssh", "on"]);
    let mut sender = Ended(
        local
            .command(&["send", "r-talk", "--file", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_retrying()
            .unwrap(),
    );
    sender
        .0
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let mut orders = std::io::BufReader::new(relay.0.stdout.take().unwrap());
    let mut line = String::new();
    orders.read_line(&mut line).unwrap();
    let order: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(order["session_id"], "r-talk", "{order}");
    assert_eq!(order["order"], "send", "{order}");
    assert_eq!(order["prompt"]["text"], text, "{order}");
    let done = format!("{{\"seq\": {}, \"ok\": true}}\n", order["seq"]);
    relay
        .0
        .stdin
        .as_mut()
        .unwrap()
        .write_all(done.as_bytes())
        .unwrap();
    let out = sender.0.wait_with_output_ref();
    assert!(out.0.success(), "{}", out.2);
    assert!(out.1.starts_with("on devbox: sent to r-talk"), "{}", out.1);
}

/// `wait_with_output` for a child kept in an [`Ended`]: its status, stdout and stderr.
trait WaitOutput {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String, String);
}

impl WaitOutput for std::process::Child {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String, String) {
        use std::io::Read;
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut pipe) = self.stdout.take() {
            let _ = pipe.read_to_string(&mut out);
        }
        if let Some(mut pipe) = self.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        (self.wait().unwrap(), out, err)
    }
}
