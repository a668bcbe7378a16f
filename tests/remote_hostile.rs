//! A remote is a stranger: what it prints is hostile input. These drive the engine's real link
//! through a fake `ssh` (`AGENT_TRAY_SSH`) that prints what a compromised remote would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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

/// Issue 27, point 1: one 14 MB line of seven million zeros where the sessions go (tried against
/// the engine before: it decoded every element, 3.4 GB), followed by one real session. The
/// engine must take the real session and stay under 100 MB at its peak.
#[test]
fn one_line_of_millions_of_elements_costs_a_scan_not_memory() {
    let w = World::new();
    let fake = w.path().join("fake-ssh");
    let session = serde_json::json!({
        "session_id": "real-1", "agent": "claude", "state": "working", "cwd": "/srv/api",
        "started_at": "2026-11-30T10:00:00Z", "last_seen": "2026-11-30T10:05:00Z",
        "state_since": "2026-11-30T10:04:00Z"
    });
    let script = format!(
        "#!/usr/bin/env python3\nimport sys, time\nout = sys.stdout\nout.write('{{\"kind\":\"snapshot\",\"protocol\":1,\"sessions\":[')\nout.write('0,' * 7000000)\nout.write({session:?})\nout.write(']}}\\n')\nout.flush()\ntime.sleep(3)\n",
        session = session.to_string()
    );
    std::fs::write(&fake, script).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let w = w.with_env("AGENT_TRAY_SSH", &fake.display().to_string());
    let out = w.run(&["remote", "add", "evil", "evil.example"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let fake = w.path().join("fake-ssh");
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
    std::fs::write(&fake, script).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let w = w.with_env("AGENT_TRAY_SSH", &fake.display().to_string());
    let out = w.run(&["remote", "add", "devbox", "dev.example"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
