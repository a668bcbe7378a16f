//! `agent-tray hook`, `notify`, `install`, `uninstall` and `doctor` as the agents and people run
//! them: the built binary, a temp HOME / AGENT_TRAY_HOME, real sockets, a real daemon.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::fs;
use std::io::Write;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_agent-tray");

/// A private world: HOME, the agents' folders and ours, all under one temp dir.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "claude", "codex", "tray"] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        World { dir }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path("home"))
            .env("CLAUDE_CONFIG_DIR", self.path("claude"))
            .env("CODEX_HOME", self.path("codex"))
            .env("AGENT_TRAY_HOME", self.path("tray"));
        c
    }
    fn run(&self, args: &[&str], stdin: &[u8]) -> (Output, Duration) {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_retrying()
            .unwrap();
        let t = Instant::now();
        {
            let mut input = child.stdin.take().unwrap();
            // The hook may stop reading early (a cut payload): a broken pipe here is expected.
            let _ = input.write_all(stdin);
        }
        let out = child.wait_with_output().unwrap();
        (out, t.elapsed())
    }
    #[cfg_attr(windows, allow(dead_code))] // the socket tests are unix's
    fn socket(&self) -> PathBuf {
        self.path("tray/run/agent-tray.sock")
    }
    fn journal(&self) -> Vec<Value> {
        let dir = self.path("tray/journal");
        let mut records = Vec::new();
        let Ok(entries) = fs::read_dir(&dir) else {
            return records;
        };
        for e in entries.flatten() {
            for line in fs::read_to_string(e.path()).unwrap().lines() {
                records.push(serde_json::from_str(line).unwrap());
            }
        }
        records
    }
}

fn fixture(rel: &str) -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(rel),
    )
    .unwrap()
}

fn claude_payloads() -> Vec<Vec<u8>> {
    fixture("claude/real-2.1.328/hooks.jsonl")
        .lines()
        .map(|l| serde_json::to_vec(&serde_json::from_str::<Value>(l).unwrap()["payload"]).unwrap())
        .collect()
}

fn assert_silent_success(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(0), "{what}: exit code");
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout must stay empty: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        out.stderr.is_empty(),
        "{what}: stderr must stay empty: {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn with_no_app_running_the_hook_exits_0_silently_and_journals_every_event() {
    // The app is not running: the events must wait on disk, and the agent must not notice.
    let w = World::new();
    for payload in claude_payloads() {
        let (out, _) = w.run(&["hook", "--agent", "claude"], &payload);
        assert_silent_success(&out, "hook without app");
    }
    let records = w.journal();
    assert_eq!(records.len(), 8);
    let events: Vec<&str> = records
        .iter()
        .map(|r| r["observation"]["event"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"PermissionRequest") && events.contains(&"SessionEnd"),
        "{events:?}"
    );
    let text = fs::read_to_string(
        fs::read_dir(w.path("tray/journal"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    )
    .unwrap();
    assert!(
        !text.contains("make a file"),
        "no prompt text in the journal"
    );
    assert!(
        !text.contains("touch /home/dev"),
        "no tool input in the journal"
    );
    let seqs: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["observation"]["seq"].as_str().unwrap())
        .collect();
    assert_eq!(seqs.len(), 8, "every record has its own sequence id");
    // Run from this test (not an agent), the hook must not invent a pid.
    assert!(records
        .iter()
        .all(|r| r["observation"].get("pid").is_none()));
}

#[test]
fn garbage_and_empty_stdin_exit_0_silently_and_are_logged() {
    let w = World::new();
    for input in [
        &b"not json at all"[..],
        b"",
        b"\xff\xfe\x00\x01",
        b"{\"session_id\": 5}",
    ] {
        let (out, _) = w.run(&["hook"], input);
        assert_silent_success(&out, "garbage");
    }
    assert!(w.journal().is_empty());
    let log = fs::read_to_string(w.path("tray/logs/hook.log")).unwrap();
    assert!(log.contains("hook:"), "{log}");
    // Bad arguments too: the hook never fails whatever the agent passes.
    let (out, _) = w.run(&["hook", "--agent", "gemini", "--what"], b"{}");
    assert_silent_success(&out, "odd arguments");
}

#[test]
fn a_5_mib_payload_is_cut_at_1_mib_and_still_journaled_as_cut() {
    let w = World::new();
    let mut payload = br#"{"session_id":"big-1","transcript_path":"/h/.claude/projects/p/big-1.jsonl","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":""#.to_vec();
    payload.extend(std::iter::repeat_n(b'a', 5 << 20));
    payload.extend_from_slice(b"\"}}");
    let (out, took) = w.run(&["hook", "--agent", "claude"], &payload);
    assert_silent_success(&out, "5 MiB stdin");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let records = w.journal();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["cut"], true);
    assert_eq!(records[0]["observation"]["event"], "PreToolUse");
    assert_eq!(records[0]["observation"]["session_id"], "big-1");
}

#[cfg(unix)] // a unix socket's backlog
#[test]
fn a_socket_that_accepts_and_never_reads_costs_at_most_the_budget() {
    // A wedged app: it accepts, then never reads or answers.
    let w = World::new();
    fs::create_dir_all(w.socket().parent().unwrap()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(w.socket()).unwrap();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(8);
        while Instant::now() < end {
            if let Ok((s, _)) = listener.accept() {
                held.push(s);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        held.len()
    });
    let payload = &claude_payloads()[2];
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let (out, took) = w.run(&["hook", "--agent", "claude"], payload);
        assert_silent_success(&out, "wedged app");
        worst = worst.max(took);
    }
    assert!(
        worst < Duration::from_millis(600),
        "a hook took {worst:?} against a wedged app"
    );
    assert_eq!(w.journal().len(), 5, "journaled regardless");
    assert!(holder.join().unwrap() >= 1, "the hook did connect");
}

#[cfg(unix)] // a unix socket's backlog
#[test]
fn a_socket_that_never_accepts_costs_at_most_the_budget() {
    // A listener whose backlog is full: connect itself would block without a deadline.
    let w = World::new();
    fs::create_dir_all(w.socket().parent().unwrap()).unwrap();
    let sock = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
    sock.bind(&socket2::SockAddr::unix(w.socket()).unwrap())
        .unwrap();
    sock.listen(0).unwrap();
    // Fill the backlog.
    let mut fillers = Vec::new();
    for _ in 0..4 {
        let s = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
        s.set_nonblocking(true).unwrap();
        let _ = s.connect(&socket2::SockAddr::unix(w.socket()).unwrap());
        fillers.push(s);
    }
    let (out, took) = w.run(&["hook", "--agent", "claude"], &claude_payloads()[0]);
    assert_silent_success(&out, "full backlog");
    assert!(took < Duration::from_millis(600), "took {took:?}");
    assert_eq!(w.journal().len(), 1);
}

#[test]
fn notify_with_codexs_argv_journals_a_turn_complete_and_prints_nothing() {
    let w = World::new();
    let line: Value = serde_json::from_str(
        fixture("codex/real-0.169.0/notify-argv.jsonl")
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let json = line["argv"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let (out, _) = w.run(&["notify", "--agent", "codex", &json], b"");
    assert_silent_success(&out, "notify");
    let (out, _) = w.run(&["notify", "--agent", "codex", "garbage"], b"");
    assert_silent_success(&out, "notify garbage");
    let (out, _) = w.run(&["notify"], b"");
    assert_silent_success(&out, "notify without argument");
    let records = w.journal();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["observation"]["event"], "TurnComplete");
    assert_eq!(records[0]["observation"]["source"], "notify");
    assert_eq!(
        records[0]["observation"]["session_id"],
        "01a228b0-3481-7d81-b3f4-e98fe82dcf76"
    );
    assert!(!serde_json::to_string(&records[0])
        .unwrap()
        .contains("Generate a concise"));
}

struct Daemon(Child);
impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_daemon(w: &World) -> Daemon {
    let child = w
        .cmd(&["daemon"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_retrying()
        .unwrap();
    let d = Daemon(child);
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end {
        if list(w).is_some() {
            return d;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the daemon never answered list --json");
}

fn list(w: &World) -> Option<Vec<Value>> {
    let out = w
        .cmd(&["list", "--json"])
        .stdin(Stdio::null())
        .output_retrying()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn wait_for_state(w: &World, session: &str, state: &str, within: Duration) -> Value {
    let end = Instant::now() + within;
    let mut last = None;
    while Instant::now() < end {
        if let Some(sessions) = list(w) {
            if let Some(s) = sessions.iter().find(|s| s["session_id"] == session) {
                if s["state"] == state {
                    return s.clone();
                }
            }
            last = Some(sessions);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{session} never reached {state}; last list: {last:?}");
}

#[test]
fn events_journaled_while_the_app_was_down_show_once_it_starts() {
    // A session ran to a permission prompt while no app ran; the app starts and must show it
    // waiting, from the journal alone.
    let w = World::new();
    for payload in &claude_payloads()[..4] {
        let (out, _) = w.run(&["hook", "--agent", "claude"], payload);
        assert_silent_success(&out, "hook before the daemon");
    }
    let _d = start_daemon(&w);
    let s = wait_for_state(
        &w,
        "33413ec6-95b9-4336-8b7d-2d91c4d8b30c",
        "waiting_for_permission",
        Duration::from_secs(10),
    );
    assert_eq!(s["agent"], "claude");
    assert_eq!(s["cwd"], "/home/dev/proj");
}

#[test]
fn with_the_daemon_running_hooks_move_the_session_live() {
    let w = World::new();
    let _d = start_daemon(&w);
    let payloads = claude_payloads();
    let (out, took) = w.run(&["hook", "--agent", "claude"], &payloads[0]);
    assert_silent_success(&out, "hook with daemon");
    // A guard against a hook that waits on the app, not a speed figure (benches/ measures that):
    // the process's start is in it, and under Wine on a loaded machine that alone took ~1 s.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    wait_for_state(
        &w,
        "33413ec6-95b9-4336-8b7d-2d91c4d8b30c",
        "starting",
        Duration::from_secs(2),
    );
    w.run(&["hook", "--agent", "claude"], &payloads[1]);
    wait_for_state(
        &w,
        "33413ec6-95b9-4336-8b7d-2d91c4d8b30c",
        "working",
        Duration::from_secs(2),
    );
    w.run(&["hook", "--agent", "claude"], &payloads[6]);
    wait_for_state(
        &w,
        "33413ec6-95b9-4336-8b7d-2d91c4d8b30c",
        "idle",
        Duration::from_secs(2),
    );
}

#[test]
fn install_dry_run_writes_nothing_install_is_idempotent_and_uninstall_restores() {
    let w = World::new();
    let settings = w.path("claude/settings.json");
    let original = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"say done ✓\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    fs::write(&settings, original).unwrap();
    let config = w.path("codex/config.toml");
    let toml = "# mine\nmodel = \"gpt-5\" # yes\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n";
    fs::write(&config, toml).unwrap();

    let out = w.cmd(&["install", "--dry-run"]).output_retrying().unwrap();
    assert!(out.status.success());
    let diff = String::from_utf8(out.stdout).unwrap();
    assert!(
        diff.contains("+++ ") && diff.contains("hook --agent claude") && diff.contains("notify"),
        "{diff}"
    );
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        original,
        "dry run wrote nothing"
    );
    assert!(!w.path("codex/hooks.json").exists());

    let out = w.cmd(&["install", "--trust"]).output_retrying().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = fs::read_to_string(&settings).unwrap();
    // The line as the binary names itself (under Wine, its path on drive Z:).
    let bin_seen = if cfg!(windows) && BIN.starts_with('/') {
        format!("Z:{}", BIN.replace('/', "\\"))
    } else {
        BIN.to_string()
    };
    let line =
        agent_tray::install::hook_command(Path::new(&bin_seen), agent_tray::model::Agent::Claude);
    assert!(installed.contains(&line), "{line} in {installed}");
    assert!(fs::read_to_string(&config)
        .unwrap()
        .contains("trusted_hash"));
    let out = w.cmd(&["install", "--trust"]).output_retrying().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing changed"));
    assert_eq!(fs::read_to_string(&settings).unwrap(), installed);

    let out = w.cmd(&["uninstall"]).output_retrying().unwrap();
    assert!(out.status.success());
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        original,
        "byte for byte"
    );
    assert_eq!(
        fs::read_to_string(&config).unwrap(),
        toml,
        "comments and all"
    );
    assert_eq!(
        fs::read_to_string(w.path("codex/hooks.json")).unwrap(),
        "{}\n"
    );
    let backups = fs::read_dir(w.path("claude"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("backup"))
        .count();
    assert!(backups >= 2, "a backup per change");
}

#[test]
fn an_invalid_settings_file_is_refused_and_left_untouched() {
    let w = World::new();
    let settings = w.path("claude/settings.json");
    let broken = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n";
    fs::write(&settings, broken).unwrap();
    let out = w.cmd(&["install", "--claude"]).output_retrying().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not valid JSON") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&settings).unwrap(), broken);
}

#[test]
fn doctor_reports_what_is_missing_and_then_nothing_wrong() {
    let w = World::new();
    let out = w.cmd(&["doctor"]).output_retrying().unwrap();
    assert!(!out.status.success(), "nothing installed, no app: problems");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("agent-tray install"), "{text}");
    assert!(text.contains("not running"), "{text}");

    assert!(w
        .cmd(&["install", "--trust"])
        .output_retrying()
        .unwrap()
        .status
        .success());
    let _d = start_daemon(&w);
    let (out, _) = w.run(&["hook", "--agent", "claude"], &claude_payloads()[0]);
    assert_silent_success(&out, "hook");
    let out = w.cmd(&["doctor"]).output_retrying().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("last Claude event: SessionStart"), "{text}");
    assert!(text.contains("Codex hooks are trusted"), "{text}");
}

#[cfg(target_os = "linux")] // /proc and the static link are Linux's
/// The hook process as it waits for its stdin: what its start-up set up. Read from `/proc` once
/// the process sits in its stdin `poll` (so the exec and start-up are done, and it is the hook's
/// own state, not the forked test process's).
#[cfg(target_os = "linux")]
struct StartedHook {
    status: String,
    maps: String,
}

#[cfg(target_os = "linux")] // /proc and the static link are Linux's
#[cfg(target_os = "linux")]
fn hook_waiting_for_stdin(w: &World) -> (Child, StartedHook) {
    // The `poll` system call on stdin: poll (7) or ppoll (271) on x86_64, ppoll (73) on aarch64.
    let polls: &[&str] = if cfg!(target_arch = "aarch64") {
        &["73"]
    } else {
        &["7", "271"]
    };
    let child = w
        .cmd(&["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .unwrap();
    let proc = PathBuf::from(format!("/proc/{}", child.id()));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let exe = fs::read_link(proc.join("exe")).unwrap_or_default();
        let syscall = fs::read_to_string(proc.join("syscall")).unwrap_or_default();
        let number = syscall.split_whitespace().next().unwrap_or("");
        if exe == Path::new(BIN).canonicalize().unwrap() && polls.contains(&number) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the hook never reached its stdin poll (syscall: {syscall:?})"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let started = StartedHook {
        status: fs::read_to_string(proc.join("status")).unwrap(),
        maps: fs::read_to_string(proc.join("maps")).unwrap(),
    };
    (child, started)
}

#[cfg(target_os = "linux")] // /proc and the static link are Linux's
/// Whether `signal` is in one of `/proc/PID/status`'s signal masks (`SigCgt`, `SigIgn`).
#[cfg(target_os = "linux")]
fn in_mask(status: &str, mask: &str, signal: libc::c_int) -> bool {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{mask}:")))
        .unwrap();
    let bits = u64::from_str_radix(line.trim(), 16).unwrap();
    bits & (1 << (signal - 1)) != 0
}

#[cfg(target_os = "linux")] // /proc and the static link are Linux's
#[cfg(target_os = "linux")]
#[test]
fn the_hook_starts_without_std_runtime_set_up_and_without_shared_libraries() {
    let w = World::new();
    let (mut child, started) = hook_waiting_for_stdin(&w);
    // std's start-up (which reads /proc/self/maps for the stack guard) installs SIGSEGV and SIGBUS
    // handlers; the hook's own entry does not run it.
    assert!(
        !in_mask(&started.status, "SigCgt", libc::SIGSEGV)
            && !in_mask(&started.status, "SigCgt", libc::SIGBUS),
        "std's stack-overflow handlers are installed:\n{}",
        started.status
    );
    // Positive control: what it must keep of std's start-up, SIGPIPE ignored.
    assert!(in_mask(&started.status, "SigIgn", libc::SIGPIPE));
    // Linked statically: no loader, no libc.so, libm.so or libgcc_s.so mapped.
    let shared: Vec<&str> = started.maps.lines().filter(|l| l.contains(".so")).collect();
    assert!(shared.is_empty(), "shared objects mapped: {shared:#?}");
    assert!(
        started.maps.contains("agent-tray"),
        "positive control: the binary itself is in the maps"
    );

    // And it is still the hook: the payload sent now is journaled, silently, exit 0.
    let payload = claude_payloads().remove(0);
    {
        let mut input = child.stdin.take().unwrap();
        input.write_all(&payload).unwrap();
    }
    let out = wait_output_within(child, Duration::from_secs(10));
    assert_silent_success(&out, "hook after a late stdin");
    assert_eq!(w.journal().len(), 1);
}

/// `wait_with_output` with a deadline: the child is killed by its pid past it.
#[cfg(target_os = "linux")]
fn wait_output_within(mut child: Child, within: Duration) -> Output {
    let deadline = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the hook did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}
