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
