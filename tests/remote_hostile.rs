//! A remote is a stranger: what it prints is hostile input. These drive the engine's real link
//! through a fake `ssh` (`AGENT_TRAY_SSH`) that prints what a compromised remote would.

// The hostile remotes are fake `ssh` programs written as shell scripts: unix here. The line
// parser they attack is the same on Windows (its unit and fuzz tests).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::time::Duration;

use common::{wait_until, World};

/// The engine's peak resident memory so far, in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// `w` with a fake `ssh` running `script` (what the remote prints), and the remote `name` at
/// `destination` added through the CLI.
fn with_fake_ssh(w: World, script: &str, name: &str, destination: &str) -> World {
    let fake = w.path().join("fake-ssh");
    std::fs::write(&fake, script).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let w = w.with_env("AGENT_TRAY_SSH", &fake.display().to_string());
    let out = w.run(&["remote", "add", name, destination]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w
}

/// Issue 27, point 1: one 14 MB line of seven million zeros where the sessions go (tried against
/// the engine before: it decoded every element, 3.4 GB), followed by one real session. The
/// engine must take the real session and stay under 100 MB at its peak.
#[test]
fn one_line_of_millions_of_elements_costs_a_scan_not_memory() {
    let w = World::new();
    let session = serde_json::json!({
        "session_id": "real-1", "agent": "claude", "state": "working", "cwd": "/srv/api",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z"
    });
    let script = format!(
        "#!/usr/bin/env python3\nimport sys, time\nout = sys.stdout\nout.write('{{\"kind\":\"snapshot\",\"protocol\":1,\"sessions\":[')\nout.write('0,' * 7000000)\nout.write({session:?})\nout.write(']}}\\n')\nout.flush()\ntime.sleep(3)\n",
        session = session.to_string()
    );
    let w = with_fake_ssh(w, &script, "evil", "evil.example");
    let daemon = w.start_daemon();
    let seen = wait_until(Duration::from_secs(60), || {
        w.list()
            .into_iter()
            .find(|s| s["session_id"] == "real-1" && s["host"] == "evil")
    });
    assert!(
        seen.is_some(),
        "the real session after the zeros was taken: {}",
        daemon.log_text()
    );
    let peak_mib = peak_rss_kib(daemon.pid()) / 1024;
    println!("engine peak RSS after a 14 MB hostile line: {peak_mib} MiB");
    assert!(
        peak_mib < 100,
        "the engine's peak RSS reached {peak_mib} MiB"
    );
    // A clean stop ends the link and its ssh child with it.
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// Issue 27, point 1, many at once: 32 remotes each send one 7 MB line (a long string beside
/// the sessions: cheap to skip, so the test is about holding lines, not parsing them), then a
/// real session. Each link held its line whole before parsing it, so 32 at
/// once held 32 of them; now one big line is read at a time, across links. The engine must take
/// every remote's real session and stay under 100 MB at its peak.
#[test]
fn thirty_two_hostile_remotes_at_once_cost_one_big_line_of_memory() {
    let w = World::new();
    let fake = w.path().join("fake-ssh");
    let session = serde_json::json!({
        "session_id": "real-1", "agent": "claude", "state": "working", "cwd": "/srv/api",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z"
    });
    let script = format!(
        "#!/usr/bin/env python3\nimport sys, time\nout = sys.stdout\nout.write('{{\"kind\":\"snapshot\",\"protocol\":1,\"pad\":\"' + 'x' * 7000000 + '\",\"sessions\":[' + {session:?} + ']}}\\n')\nout.flush()\ntime.sleep(120)\n",
        session = session.to_string()
    );
    common::write_executable(&fake, script.as_bytes());
    let w = w.with_env("AGENT_TRAY_SSH", &fake.display().to_string());
    for i in 0..32 {
        let out = w.run(&[
            "remote",
            "add",
            &format!("evil{i}"),
            &format!("evil{i}.example"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let daemon = w.start_daemon();
    let seen = wait_until(Duration::from_secs(180), || {
        let hosts = w
            .list()
            .into_iter()
            .filter(|s| s["session_id"] == "real-1")
            .count();
        (hosts == 32).then_some(())
    });
    assert!(
        seen.is_some(),
        "every remote's real session was taken: {}",
        daemon.log_text()
    );
    let peak_mib = peak_rss_kib(daemon.pid()) / 1024;
    println!("engine peak RSS after 32 remotes sent a 7 MB hostile line each: {peak_mib} MiB");
    assert!(
        peak_mib < 100,
        "the engine's peak RSS reached {peak_mib} MiB"
    );
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// The CPU time (user + system) the process `pid` has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap();
    Duration::from_millis(ticks * 1000 / hz)
}

/// Issue 27, point 2: a remote repeating change lines as fast as ssh carries them (tried
/// against the engine before: 117 % of a core, every line republishing the whole picture under
/// the lock local hooks need). The engine must stay under half a core while it lasts, local
/// hooks must keep landing, and when the flood stops the remote's last word on every session is
/// what the engine shows: coalescing loses nothing.
#[test]
fn a_remote_flooding_changes_costs_under_half_a_core_and_loses_no_final_state() {
    let w = World::new();
    let fake = w.path().join("fake-ssh");
    let flood_secs = 15;
    let script = format!(
        r#"#!/usr/bin/env python3
import json, sys, time
out = sys.stdout
def session(i, state, title, n):
    return {{"session_id": "flood-%d" % i, "agent": "claude", "state": state, "cwd": "/srv/app%d" % i,
             "branch": "main", "started_at": "2026-11-30T10:00:00Z",
             "last_seen": "2026-11-30T10:%02d:%02d.%06dZ" % (n // 60 % 60, n % 60, n % 1000000),
             "state_since": "2026-11-30T10:04:00Z", "title": title, "tmux": "work:@1.%2"}}
N = 300
out.write(json.dumps({{"kind": "snapshot", "protocol": 1, "sessions": [session(i, "working", "start", 0) for i in range(N)], "ended": []}}) + "\n")
out.flush()
block = "".join(json.dumps({{"kind": "changed", "session": session(k % N, "working", "busy", k)}}) + "\n" for k in range(2000))
end = time.monotonic() + {flood_secs}
while time.monotonic() < end:
    out.write(block)
out.write("".join(json.dumps({{"kind": "changed", "session": session(i, "idle", "final", 999999)}}) + "\n" for i in range(N)))
out.flush()
time.sleep(60)
"#
    );
    common::write_executable(&fake, script.as_bytes());
    let w = w.with_env("AGENT_TRAY_SSH", &fake.display().to_string());
    let out = w.run(&["remote", "add", "flood", "flood.example"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let daemon = w.start_daemon();
    let started = std::time::Instant::now();
    let arrived = wait_until(Duration::from_secs(20), || {
        w.list().iter().any(|s| s["host"] == "flood")
    });
    assert!(
        arrived.is_some(),
        "the remote's snapshot arrived: {}",
        daemon.log_text()
    );

    // While the flood lasts: the engine's CPU over three quiet seconds (nothing asked of it but
    // the remote's lines), then local hooks landing.
    let cpu_before = cpu_time(daemon.pid());
    let wall = std::time::Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let cores = cpu_time(daemon.pid())
        .saturating_sub(cpu_before)
        .as_secs_f64()
        / wall.elapsed().as_secs_f64();
    let mut latencies = Vec::new();
    for i in 0..10 {
        let id = format!("local-{i}");
        let t = std::time::Instant::now();
        w.observe(&[
            "--agent",
            "claude",
            "--event",
            "UserPromptSubmit",
            "--session",
            &id,
        ]);
        assert!(
            wait_until(Duration::from_secs(5), || w.session(&id)).is_some(),
            "local hook {i} reached the list during the flood"
        );
        latencies.push(t.elapsed());
    }
    assert!(
        started.elapsed() < Duration::from_secs(flood_secs),
        "the measurement ran inside the flood (it took too long to be meaningful)"
    );
    latencies.sort();
    println!(
        "during the flood: engine {:.0} % of a core; local hook to list (two CLI runs) p50 {:?}, max {:?}",
        cores * 100.0,
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert!(
        cores < 0.5,
        "the engine used {:.0} % of a core under a remote's flood",
        cores * 100.0
    );

    // After it: every session shows the remote's last word.
    let settled = wait_until(Duration::from_secs(60), || {
        let finals = w
            .list()
            .iter()
            .filter(|s| s["host"] == "flood" && s["state"] == "idle" && s["title"] == "final")
            .count();
        (finals == 300).then_some(())
    });
    assert!(
        settled.is_some(),
        "the remote's final state reached every session: {}",
        daemon.log_text()
    );
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// Issue 27, point 4: a remote announces a session whose id is that of a session on this
/// machine (ids are each host's own to choose). Both are listed, each with its own host and
/// folder: the remote's neither hides the local one nor takes its place.
#[test]
fn a_remote_session_with_a_local_sessions_id_is_listed_beside_it_not_instead_of_it() {
    let w = World::new();
    let session = serde_json::json!({
        "session_id": "same-id", "agent": "claude", "state": "working", "cwd": "/far/away",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z"
    });
    let snapshot = serde_json::json!({"kind": "snapshot", "protocol": 1, "sessions": [session]});
    let script = format!(
        "#!/usr/bin/env python3\nimport sys, time\nsys.stdout.write({line:?} + '\\n')\nsys.stdout.flush()\ntime.sleep(60)\n",
        line = snapshot.to_string()
    );
    let w = with_fake_ssh(w, &script, "devbox", "dev.example");
    let daemon = w.start_daemon();
    let local_dir = w.path().join("here");
    std::fs::create_dir_all(&local_dir).unwrap();
    w.observe(&[
        "--session",
        "same-id",
        "--agent",
        "claude",
        "--event",
        "SessionStart",
        "--cwd",
        &local_dir.display().to_string(),
    ]);
    let both = wait_until(Duration::from_secs(30), || {
        let same: Vec<_> = w
            .list()
            .into_iter()
            .filter(|s| s["session_id"] == "same-id")
            .collect();
        (same.len() == 2).then_some(same)
    });
    let both = both.unwrap_or_else(|| {
        panic!(
            "both sessions listed: {:?}\n{}",
            w.list(),
            daemon.log_text()
        )
    });
    let local = both.iter().find(|s| s["host"].is_null()).unwrap();
    let remote = both.iter().find(|s| s["host"] == "devbox").unwrap();
    assert_eq!(local["cwd"], local_dir.display().to_string().as_str());
    assert_eq!(remote["cwd"], "/far/away");
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// Issue 29, remotes: a remote's plan windows arrive on its `limits` line and are listed as that
/// remote's, bounded (at most eight), one hop only (a window already naming a host is dropped);
/// a remote session's context figures come with it.
#[test]
fn a_remotes_plan_windows_and_context_are_listed_as_its_own_one_hop_only() {
    let w = World::new();
    let session = serde_json::json!({
        "session_id": "far-1", "agent": "codex", "state": "idle", "cwd": "/far/away",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z", "context_tokens": 120000, "context_window": 258400
    });
    let snapshot = serde_json::json!({"kind": "snapshot", "protocol": 1, "sessions": [session]});
    let resets = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let window = |name: &str, used: f64| {
        serde_json::json!({"agent": "codex", "account": "pro", "window": name, "window_minutes": 300,
            "used_percent": used, "resets_at": resets, "seen_at": "2026-11-30T10:05:00Z",
            "session_id": "far-1", "host": null})
    };
    let mut windows: Vec<serde_json::Value> = vec![window("5h", 42.0)];
    let mut chained = window("chained", 99.0);
    chained["host"] = serde_json::json!("third-box");
    windows.push(chained);
    windows.extend((0..20).map(|n| window(&format!("w{n}"), 250.0)));
    let limits = serde_json::json!({"kind": "limits", "limits": windows});
    let script = format!(
        "#!/usr/bin/env python3\nimport sys, time\nsys.stdout.write({a:?} + '\\n' + {b:?} + '\\n')\nsys.stdout.flush()\ntime.sleep(60)\n",
        a = snapshot.to_string(),
        b = limits.to_string()
    );
    let w = with_fake_ssh(w, &script, "devbox", "dev.example");
    let daemon = w.start_daemon();
    let limits_now = || -> Vec<serde_json::Value> {
        let out = w.run(&["limits", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    };
    let got = wait_until(Duration::from_secs(30), || {
        let l = limits_now();
        (!l.is_empty()).then_some(l)
    })
    .unwrap_or_else(|| panic!("no remote windows: {}", daemon.log_text()));
    // The line's first eight are read (the rest skipped unbuilt); the chained one among them
    // is dropped.
    assert_eq!(got.len(), 7, "at most eight from one remote: {got:?}");
    assert!(got.iter().all(|l| l["host"] == "devbox"), "{got:?}");
    assert!(
        !got.iter().any(|l| l["window"] == "chained"),
        "one hop only: {got:?}"
    );
    let five = got.iter().find(|l| l["window"] == "5h").unwrap();
    assert_eq!(five["used_percent"], 42.0);
    assert!(got
        .iter()
        .filter(|l| l["window"] != "5h")
        .all(|l| l["used_percent"] == 100.0));
    let table = String::from_utf8_lossy(&w.run(&["limits"]).stdout).into_owned();
    assert!(
        table.contains("Codex pro on devbox: 5h window 42% used, resets"),
        "{table}"
    );
    let far = w
        .list()
        .into_iter()
        .find(|s| s["session_id"] == "far-1")
        .unwrap();
    assert_eq!(
        (
            far["context_tokens"].as_u64(),
            far["context_window"].as_u64()
        ),
        (Some(120_000), Some(258_400))
    );
    // The remote's entry removed: its windows go with it.
    assert!(w.run(&["remote", "remove", "devbox"]).status.success());
    let gone = wait_until(Duration::from_secs(30), || {
        limits_now().is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "windows of a removed remote: {:?}",
        limits_now()
    );
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// The remote's side of it: `watch --json --protocol 1` follows its snapshot with the engine's
/// plan windows (none yet here: an empty list), which plain `watch --json` never prints.
#[test]
fn a_remote_watch_carries_the_plan_windows_and_a_plain_watch_does_not() {
    use std::io::{BufRead, BufReader};
    let w = World::new();
    let daemon = w.start_daemon();
    let read_two = |args: &[&str]| -> Vec<String> {
        let mut child = w
            .command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn_retrying()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
            lines.push(line);
            if lines.len() == 2 {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        lines
    };
    let remote = read_two(&["watch", "--json", "--protocol", "1"]);
    assert_eq!(remote.len(), 2, "{remote:?}");
    let limits: serde_json::Value = serde_json::from_str(&remote[1]).unwrap();
    assert_eq!(limits, serde_json::json!({"kind": "limits", "limits": []}));
    let plain = read_two(&["watch", "--json"]);
    assert_eq!(
        plain.len(),
        1,
        "a plain watch prints its snapshot and then only changes: {plain:?}"
    );
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}

/// Issue 37, point 4: a hostile remote prints plan-limit lines as fast as it can, each with a new
/// reset time for the same window (before: every line replaced the book, each replacement woke
/// the alerts and was a new "window" to alert on, about 48 alerts a second). Over a fixed 8 s the
/// engine must take the remote's limits at most every few seconds, keep at most its eight windows,
/// and write next to nothing to its log; when the flood stops, its last word is taken.
#[test]
fn a_remote_flooding_limit_lines_with_new_reset_times_is_taken_every_few_seconds() {
    let w = World::new();
    let session = serde_json::json!({
        "session_id": "far-1", "agent": "codex", "state": "idle", "cwd": "/far/away",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z"
    });
    let snapshot = serde_json::json!({"kind": "snapshot", "protocol": 1, "sessions": [session]});
    // Each line: the same account's 5h window at 95 %, resetting one second later than the
    // line before; then, after 8 s, one last line at 42 % (the state to end on).
    let script = format!(
        r#"#!/usr/bin/env python3
import sys, time, json, datetime
out = sys.stdout
out.write({snapshot:?} + '\n')
out.flush()
base = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
def line(n, used):
    reset = (base + datetime.timedelta(seconds=n)).isoformat()
    w = {{"agent": "codex", "account": "pro", "window": "5h", "window_minutes": 300,
         "used_percent": used, "resets_at": reset, "seen_at": "2026-11-30T10:05:00Z",
         "session_id": "far-1"}}
    return json.dumps({{"kind": "limits", "limits": [w]}}) + '\n'
end = time.time() + 8
n = 0
while time.time() < end:
    out.write(line(n, 95.0))
    out.flush()
    n += 1
    time.sleep(0.002)
out.write(line(n, 42.0))
out.flush()
sys.stderr.write('lines %d\n' % n)
time.sleep(60)
"#,
        snapshot = snapshot.to_string()
    );
    let w = with_fake_ssh(w, &script, "evil", "evil.example");
    let daemon = w.start_daemon();
    let limits_now = || -> Vec<serde_json::Value> {
        let out = w.run(&["limits", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    };
    // The flood starts with the link: wait for its first window.
    wait_until(Duration::from_secs(30), || {
        (!limits_now().is_empty()).then_some(())
    })
    .unwrap_or_else(|| panic!("no remote windows: {}", daemon.log_text()));
    let log_before = daemon.log_text().len();
    let started = std::time::Instant::now();
    let mut resets_seen = std::collections::BTreeSet::new();
    let mut most_windows = 0;
    while started.elapsed() < Duration::from_secs(6) {
        let now = limits_now();
        most_windows = most_windows.max(now.len());
        for window in &now {
            resets_seen.insert(window["resets_at"].as_str().unwrap_or("").to_string());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let logged = daemon.log_text().len() - log_before;
    println!(
        "6 s of a limits flood: {} reset times taken, {logged} bytes logged",
        resets_seen.len()
    );
    assert!(
        resets_seen.len() <= 4,
        "the remote's limits are taken at most every 3 s (6 s: at most 3, +1 at a boundary): {resets_seen:?}"
    );
    assert!(most_windows <= 8, "one remote keeps at most 8 windows");
    let log = daemon.log_text();
    assert!(
        logged < 2_000,
        "a burst of dropped lines is logged once, not line by line ({logged} bytes): {}",
        &log[log_before..log.len().min(log_before + 2_000)]
    );
    assert_eq!(
        log.matches("remote_limits_held").count(),
        1,
        "the burst is logged, once: {log}"
    );
    // Positive control: the last line (42 %) is taken within a few seconds of the flood's end.
    let last = wait_until(Duration::from_secs(15), || {
        limits_now()
            .iter()
            .any(|l| l["used_percent"] == 42.0)
            .then_some(())
    });
    assert!(
        last.is_some(),
        "the remote's last word is taken: {:?}",
        limits_now()
    );
    assert!(daemon.terminate().is_some_and(|s| s.success()));
}
