//! `cargo bench --bench remote_link`: what a remote costs, over a real sshd on loopback.
//!
//! 1. Latency from a change on the remote to the local engine's `watch` stream: an
//!    `agent-tray observe` on the remote flips a session's state, and the time until the local
//!    watch prints it is taken (p50, p99). The same loop against the local engine alone is the
//!    baseline measured in the same run (it includes the `observe` process start both times);
//!    the difference is what the link adds.
//! 2. CPU of the local engine at rest: its user+system time over a quiet window with no
//!    remote, then with three remotes connected (and their `ssh` children's, apart).
//!
//! Needs `sshd` (openssh-server) and ssh-keygen, like `tests/remote_ssh.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/common/sshd.rs"]
mod sshd;

use std::io::BufRead;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{wait_until, World};

const ROUNDS: usize = 200;
const REST: Duration = Duration::from_secs(15);

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// utime + stime of `pid`, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return 0.0;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    ticks as f64 / ticks_per_sec()
}

fn ssh_children(pid: u32) -> Vec<u32> {
    sshd::descendants(pid)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "ssh")
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Flips `id` between working and idle on `driver` and times until `watcher`'s stream shows
/// each new state for it.
fn latency(driver: &World, watcher: &World, id: &str, host: Option<&str>) -> Vec<Duration> {
    let mut watch = watcher
        .command(&["watch", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    // Bounded: the loop below waits for each line before causing the next.
    let (tx, rx) = mpsc::sync_channel::<(Instant, serde_json::Value)>(64);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(value) = serde_json::from_str(&line) else {
                continue;
            };
            if tx.send((Instant::now(), value)).is_err() {
                break;
            }
        }
    });
    driver.observe(&["--session", id, "--event", "SessionStart"]);
    let mut took = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let (event, state) = if round % 2 == 0 {
            ("UserPromptSubmit", "working")
        } else {
            ("Stop", "idle")
        };
        let start = Instant::now();
        driver.observe(&["--session", id, "--event", event]);
        let deadline = start + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, value) = rx.recv_timeout(left).expect("the change arrives");
            let session = &value["session"];
            let host_ok = match host {
                Some(h) => session["host"] == h,
                None => session["host"].is_null(),
            };
            if session["session_id"] == id && session["state"] == state && host_ok {
                took.push(at - start);
                break;
            }
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    took.sort();
    took
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let remote = World::new();
    let _remote_daemon = remote.start_daemon();
    let keys = sshd::SshKeys::new(&remote.path().join("ssh"));
    let port = sshd::free_port();
    keys.add_host("devbox", port);
    let mut env = remote.envs.clone();
    env.push((
        "PATH".into(),
        format!("{}:/usr/bin:/bin", sshd::bin_dir().display()),
    ));
    let _server = sshd::Sshd::start(&keys, "bench", port, &env);
    let local = World::new().with_env(
        "AGENT_TRAY_SSH_CONFIG",
        &keys.client_config.display().to_string(),
    );
    let daemon = local.start_daemon();
    let pid = daemon.pid();

    std::thread::sleep(Duration::from_secs(2));
    let c0 = cpu_secs(pid);
    std::thread::sleep(REST);
    let base = cpu_secs(pid) - c0;

    for name in ["devbox", "devbox2", "devbox3"] {
        let out = local.run(&["remote", "add", name, "devbox"]);
        assert!(out.status.success());
    }
    wait_until(Duration::from_secs(30), || {
        String::from_utf8_lossy(&local.run(&["remote", "list"]).stdout)
            .matches("connected")
            .count()
            == 3
    })
    .expect("three links connect");
    std::thread::sleep(Duration::from_secs(2));
    let ssh = ssh_children(pid);
    let (c1, s1) = (cpu_secs(pid), ssh.iter().map(|p| cpu_secs(*p)).sum::<f64>());
    std::thread::sleep(REST);
    let with = cpu_secs(pid) - c1;
    let ssh_cpu = ssh.iter().map(|p| cpu_secs(*p)).sum::<f64>() - s1;

    let local_only = latency(&local, &local, "bench-local", None);
    let over_ssh = latency(&remote, &local, "bench-remote", Some("devbox"));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("remote change -> local watch, {ROUNDS} changes on loopback:");
    println!(
        "  local engine alone (baseline): p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&local_only, 0.5)),
        ms(percentile(&local_only, 0.99))
    );
    println!(
        "  through the ssh link:          p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&over_ssh, 0.5)),
        ms(percentile(&over_ssh, 0.99))
    );
    let secs = REST.as_secs_f64();
    println!("local engine CPU at rest over {secs:.0} s:");
    println!("  no remote:      {:.3} % of a core", base / secs * 100.0);
    println!(
        "  three remotes:  {:.3} % of a core ({:.4} % per remote); their ssh children {:.3} % together",
        with / secs * 100.0,
        (with - base).max(0.0) / 3.0 / secs * 100.0,
        ssh_cpu / secs * 100.0
    );
}
