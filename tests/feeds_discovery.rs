//! The file feeds against real files in temporary folders and real processes: what a user who
//! never installed a hook sees. Never the real `~/.claude` or `~/.codex`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::Child;
#[cfg(unix)]
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use agent_tray::engine::agent_feeds::spawn_all;
use agent_tray::feeds::{FeedConfig, FeedDirs, FeedSink, FeedTiming};
use agent_tray::model::{Agent, EndReason, Session, SessionState};
use agent_tray::registry::SessionsRegistry;
use tokio_util::sync::CancellationToken;

/// A registry and the feeds over private folders, with short timings.
struct Discovery {
    registry: Arc<SessionsRegistry>,
    token: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Discovery {
    fn start(claude: &Path, codex: &Path, rescan: Duration) -> Self {
        let registry = Arc::new(SessionsRegistry::new());
        let mut config = FeedConfig::new(
            FeedDirs::default()
                .with(Agent::Claude, vec![claude.to_path_buf()])
                .with(Agent::Codex, vec![codex.to_path_buf()]),
            Duration::from_secs(300),
        );
        config.timing = FeedTiming {
            debounce: Duration::from_millis(20),
            rescan,
            tick: Duration::from_millis(200),
            channel_capacity: 256,
        };
        let token = CancellationToken::new();
        let tasks = spawn_all(
            FeedSink::without_history(registry.clone()),
            config,
            token.clone(),
        )
        .into_iter()
        .map(|(_, task)| task)
        .collect();
        Discovery {
            registry,
            token,
            tasks,
        }
    }

    /// Waits until the session satisfies `check`, or fails saying what was seen.
    async fn wait_for(&self, id: &str, what: &str, check: impl Fn(&Session) -> bool) -> Session {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let seen = self.registry.get(id);
            if let Some(s) = seen.as_ref().filter(|s| check(s)) {
                return s.clone();
            }
            if Instant::now() > deadline {
                panic!("{what}: session {id} is {seen:?}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn stop(self) {
        self.token.cancel();
        for t in self.tasks {
            t.await.unwrap();
        }
    }
}

/// A real process to stand for an agent.
struct Sleeper(Child);

impl Sleeper {
    fn spawn() -> Self {
        Sleeper(common::sleeper())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.kill();
    }
}

fn sessions_file(pid: u32, proc_start: &str, status: &str, waiting_for: Option<&str>) -> String {
    let now = chrono::Utc::now().timestamp_millis();
    let mut v = serde_json::json!({
        "pid": pid, "sessionId": format!("claude-{pid}"), "cwd": "/home/dev/proj",
        "procStart": proc_start, "kind": "interactive", "name": "proj-ae", "tmux": "work:@0.%0",
        "status": status, "updatedAt": now, "statusUpdatedAt": now,
    });
    if let Some(w) = waiting_for {
        v["waitingFor"] = w.into();
    }
    v.to_string()
}

/// Writes a file the way Claude does: whole, then renamed into place.
fn write_atomically(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn append(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn ts() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_claude_sessions_file_shows_its_state_moves_with_it_and_ends_when_removed() {
    // A `claude` (here a sleep standing in for it) with its live-session file.
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let agent = Sleeper::spawn();
    let token = agent_tray::process::start_token(agent.pid()).unwrap();
    let file = claude.join(format!("sessions/{}.json", agent.pid()));
    write_atomically(&file, &sessions_file(agent.pid(), &token, "idle", None));
    let d = Discovery::start(&claude, &dir.path().join("codex"), Duration::from_secs(60));
    let id = format!("claude-{}", agent.pid());

    let s = d
        .wait_for(&id, "discovered idle", |s| s.state == SessionState::Idle)
        .await;
    assert_eq!(s.pid, Some(agent.pid()), "the claude process owns it");
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/proj"));
    assert_eq!(s.tmux.as_deref(), Some("work:@0.%0"));
    assert_eq!(s.title.as_deref(), Some("proj-ae"));

    write_atomically(&file, &sessions_file(agent.pid(), &token, "busy", None));
    d.wait_for(&id, "working on busy", |s| s.state == SessionState::Working)
        .await;
    write_atomically(
        &file,
        &sessions_file(agent.pid(), &token, "waiting", Some("permission prompt")),
    );
    d.wait_for(&id, "permission wait", |s| {
        s.state == SessionState::WaitingForPermission
    })
    .await;

    std::fs::remove_file(&file).unwrap();
    let s = d
        .wait_for(&id, "ended on a clean exit", |s| {
            s.state == SessionState::Ended
        })
        .await;
    assert_eq!(s.end_reason, Some(EndReason::SessionEnd));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_claude_whose_file_stays_behind_ends_as_a_death() {
    // kill -9: no SessionEnd, the file stays. The feed's tick sees the process gone.
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let mut agent = Sleeper::spawn();
    let token = agent_tray::process::start_token(agent.pid()).unwrap();
    let file = claude.join(format!("sessions/{}.json", agent.pid()));
    write_atomically(&file, &sessions_file(agent.pid(), &token, "busy", None));
    let d = Discovery::start(&claude, &dir.path().join("codex"), Duration::from_secs(60));
    let id = format!("claude-{}", agent.pid());
    d.wait_for(&id, "working", |s| s.state == SessionState::Working)
        .await;
    agent.kill();
    let s = d
        .wait_for(&id, "ended after the kill", |s| {
            s.state == SessionState::Ended
        })
        .await;
    assert_eq!(
        s.end_reason,
        Some(EndReason::ProcessGone),
        "a death, not a clean exit"
    );
    assert!(file.exists());
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_sessions_file_whose_start_token_does_not_match_shows_nothing() {
    // The pid is alive but is another process than the one that wrote the file (pid reuse),
    // and another file names a pid that does not exist at all (a crash long ago).
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let agent = Sleeper::spawn();
    write_atomically(
        &claude.join(format!("sessions/{}.json", agent.pid())),
        &sessions_file(agent.pid(), "1", "busy", None),
    );
    write_atomically(
        &claude.join("sessions/4194300.json"),
        &sessions_file(4_194_300, "1", "busy", None),
    );
    // Positive control: a believed file beside them, written after the stale ones, shows. Had the
    // feed not run, "nothing shown" below would prove nothing.
    let live = Sleeper::spawn();
    let live_token = agent_tray::process::start_token(live.pid()).unwrap();
    write_atomically(
        &claude.join(format!("sessions/{}.json", live.pid())),
        &sessions_file(live.pid(), &live_token, "busy", None),
    );
    let d = Discovery::start(
        &claude,
        &dir.path().join("codex"),
        Duration::from_millis(200),
    );
    d.wait_for(
        &format!("claude-{}", live.pid()),
        "the believed file",
        |s| s.state == SessionState::Working,
    )
    .await;
    // Several rescans and ticks after that, the stale ones still show nothing.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let ids: Vec<String> = d
        .registry
        .list()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(ids, [format!("claude-{}", live.pid())]);
    d.stop().await;
}

fn prompt_line() -> String {
    format!(
        "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}},\"timestamp\":\"{}\",\"cwd\":\"/w\",\"gitBranch\":\"main\",\"sessionId\":\"t1\"}}\n",
        ts()
    )
}

fn assistant_line() -> String {
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"model\":\"claude-opus-5-5\",\"content\":[]}},\"timestamp\":\"{}\",\"cwd\":\"/w\"}}\n",
        ts()
    )
}

fn turn_end_line() -> String {
    format!(
        "{{\"type\":\"system\",\"subtype\":\"turn_duration\",\"durationMs\":5,\"timestamp\":\"{}\"}}\n",
        ts()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_transcript_is_working_and_its_turn_duration_line_makes_it_idle() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    let transcript = claude.join("projects").join("-w").join("t1.jsonl");
    append(&transcript, &prompt_line());
    let d = Discovery::start(&claude, &dir.path().join("codex"), Duration::from_secs(60));
    d.wait_for("t1", "working from the prompt line", |s| {
        s.state == SessionState::Working
    })
    .await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    append(&transcript, &turn_end_line());
    let s = d
        .wait_for("t1", "idle after turn_duration", |s| {
            s.state == SessionState::Idle
        })
        .await;
    assert_eq!(s.branch.as_deref(), Some("main"));
    assert_eq!(s.cwd.as_deref(), Some("/w"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    append(&transcript, &prompt_line());
    append(&transcript, &assistant_line());
    let s = d
        .wait_for("t1", "working on the next turn", |s| {
            s.state == SessionState::Working
        })
        .await;
    assert_eq!(s.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(
        s.transcript_path.as_deref(),
        Some(transcript.to_str().unwrap())
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_created_after_the_watcher_started_is_picked_up_by_its_events() {
    // Claude installed after the tray: no config folder at all at start. The rescan is set far
    // beyond the test's length, so only the watch on the nearest ancestor can find it.
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("later/claude");
    let d = Discovery::start(&claude, &dir.path().join("codex"), Duration::from_secs(600));
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::create_dir_all(claude.join("projects/-w")).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let transcript = claude.join("projects").join("-w").join("t1.jsonl");
    append(&transcript, &prompt_line());
    d.wait_for("t1", "found in a folder that appeared later", |s| {
        s.state == SessionState::Working
    })
    .await;
    d.stop().await;
}

/// A process holding a Codex thread's writer lock, as Codex does (an exclusive `flock`).
#[cfg(unix)]
struct LockHolder {
    flock: Child,
}

/// Windows: the lock Codex's standard library takes there (`LockFileEx` over the whole file),
/// held by this test's own handle and released by closing it.
#[cfg(windows)]
struct LockHolder {
    file: Option<std::fs::File>,
}

#[cfg(windows)]
impl LockHolder {
    fn hold(lock: &Path) -> Self {
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock)
            .unwrap();
        file.try_lock().unwrap();
        LockHolder { file: Some(file) }
    }

    fn release(&mut self) {
        self.file = None;
    }
}

#[cfg(unix)]
impl LockHolder {
    fn hold(lock: &Path) -> Self {
        std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
        // -o: only `flock` itself holds the lock, so killing it releases it.
        let flock = Command::new("flock")
            .arg("-o")
            .arg(lock)
            .arg("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .spawn_retrying()
            .unwrap();
        let holder = LockHolder { flock };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string("/proc/locks")
            .unwrap()
            .contains(&format!(" {} ", holder.flock.id()))
        {
            assert!(Instant::now() < deadline, "flock never took the lock");
            std::thread::sleep(Duration::from_millis(10));
        }
        holder
    }

    fn release(&mut self) {
        let pid = self.flock.id();
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let _ = self.flock.kill();
        let _ = self.flock.wait();
        for child in children.split_whitespace() {
            let _ = Command::new("kill").arg(child).status();
        }
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        self.release();
    }
}

const THREAD: &str = "01a228b4-48e5-7151-b535-fa0e4e9093ad";

fn rollout_line(kind: &str, payload: serde_json::Value) -> String {
    format!(
        "{}\n",
        serde_json::json!({"timestamp": ts(), "ordinal": 0, "type": kind, "payload": payload})
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_rollout_with_a_held_lock_is_working_then_idle_and_ends_when_the_lock_is_released()
{
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join("codex");
    let mut holder = LockHolder::hold(&codex.join(format!("thread-writer-locks/{THREAD}.lock")));
    let rollout = codex.join(format!(
        "sessions/2026/11/29/rollout-2026-11-29T19-07-13-{THREAD}.jsonl"
    ));
    append(
        &rollout,
        &rollout_line(
            "session_meta",
            serde_json::json!({"id": THREAD, "cwd": "/home/dev/proj", "source": "cli", "originator": "codex-tui"}),
        ),
    );
    let d = Discovery::start(&dir.path().join("claude"), &codex, Duration::from_secs(60));
    let s = d
        .wait_for(THREAD, "seen from its rollout", |s| {
            s.state == SessionState::Idle
        })
        .await;
    // Who holds a lock is read from /proc/locks (Linux); Windows does not say.
    #[cfg(unix)]
    assert_eq!(
        s.pid,
        Some(holder.flock.id()),
        "the lock holder (no codex above it) is the session's process"
    );
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/proj"));

    append(
        &rollout,
        &rollout_line(
            "turn_context",
            serde_json::json!({"model": "mock-model", "cwd": "/home/dev/proj"}),
        ),
    );
    append(
        &rollout,
        &rollout_line("event_msg", serde_json::json!({"type": "task_started"})),
    );
    let s = d
        .wait_for(THREAD, "working on task_started", |s| {
            s.state == SessionState::Working
        })
        .await;
    assert_eq!(s.model.as_deref(), Some("mock-model"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    append(
        &rollout,
        &rollout_line("event_msg", serde_json::json!({"type": "task_complete"})),
    );
    d.wait_for(THREAD, "idle on task_complete", |s| {
        s.state == SessionState::Idle
    })
    .await;

    // The process dies without writing anything: only the lock tells.
    holder.release();
    let s = d
        .wait_for(THREAD, "ended when the lock was released", |s| {
            s.state == SessionState::Ended
        })
        .await;
    assert_eq!(s.end_reason, Some(EndReason::FilesSayEnded));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_codex_thread_is_not_shown_and_an_archived_one_ends() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join("codex");
    let meta = |id: &str| {
        rollout_line(
            "session_meta",
            serde_json::json!({"id": id, "cwd": "/p", "source": "cli"}),
        )
    };
    // A thread whose lock exists and is free: Codex exited a moment ago.
    let done = "11111111-2222-3333-4444-555555555555";
    std::fs::create_dir_all(codex.join("thread-writer-locks")).unwrap();
    std::fs::write(codex.join(format!("thread-writer-locks/{done}.lock")), "").unwrap();
    append(
        &codex.join(format!(
            "sessions/2026/11/29/rollout-2026-11-29T19-07-13-{done}.jsonl"
        )),
        &meta(done),
    );
    // A live one, then archived.
    let _holder = LockHolder::hold(&codex.join(format!("thread-writer-locks/{THREAD}.lock")));
    let name = format!("rollout-2026-11-29T19-07-13-{THREAD}.jsonl");
    let live = codex.join("sessions/2026/11/29").join(&name);
    append(&live, &meta(THREAD));
    let d = Discovery::start(&dir.path().join("claude"), &codex, Duration::from_secs(60));
    d.wait_for(THREAD, "live thread shown", |s| {
        s.state == SessionState::Idle
    })
    .await;
    assert!(
        d.registry.get(done).is_none(),
        "no ghost of a finished thread"
    );
    std::fs::create_dir_all(codex.join("archived_sessions")).unwrap();
    std::fs::rename(&live, codex.join("archived_sessions").join(&name)).unwrap();
    d.wait_for(THREAD, "ended when archived", |s| {
        s.state == SessionState::Ended
    })
    .await;
    d.stop().await;
}

#[cfg(unix)] // FIFOs and SIGTERM are unix's
/// FIFOs made with `mkfifo`, each opened for writing (without blocking) when dropped: a reader
/// stuck on one (the bug this guards against) is then released, so a failing test fails instead
/// of hanging its runtime's shutdown.
struct Fifos(Vec<std::path::PathBuf>);

#[cfg(unix)]
impl Fifos {
    fn make(paths: &[std::path::PathBuf]) -> Self {
        use std::os::unix::ffi::OsStrExt;
        for path in paths {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "{path:?}");
        }
        Fifos(paths.to_vec())
    }
}

#[cfg(unix)]
impl Drop for Fifos {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        for path in &self.0 {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path);
        }
    }
}

#[cfg(unix)] // FIFOs and SIGTERM are unix's
/// A FIFO named like each kind of agent file: a sessions file, a transcript, a rollout, a lock.
fn fifos_like_agent_files(claude: &Path, codex: &Path) -> Fifos {
    const FIFO_THREAD: &str = "0f0f0f0f-48e5-7151-b535-fa0e4e9093ad";
    Fifos::make(&[
        claude.join("sessions/4194301.json"),
        claude.join("projects/-fifo/0f0f0f0f-95b9-4336-8b7d-2d91c4d8b30c.jsonl"),
        codex.join(format!(
            "sessions/2026/11/29/rollout-2026-11-29T19-07-13-{FIFO_THREAD}.jsonl"
        )),
        codex.join(format!("thread-writer-locks/{FIFO_THREAD}.lock")),
    ])
}

#[cfg(unix)] // FIFOs and SIGTERM are unix's
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_named_like_agent_files_are_skipped_and_every_feed_still_discovers() {
    // Any program the user runs can write in ~/.claude and ~/.codex; a FIFO blocks a plain open
    // for good. Each feed must skip it and go on finding the real files beside it.
    let dir = tempfile::tempdir().unwrap();
    let (claude, codex) = (dir.path().join("claude"), dir.path().join("codex"));
    let _fifos = fifos_like_agent_files(&claude, &codex);
    let d = Discovery::start(&claude, &codex, Duration::from_millis(200));
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Written after the feeds met the FIFOs: only a feed that is still running can see them.
    let agent = Sleeper::spawn();
    let token = agent_tray::process::start_token(agent.pid()).unwrap();
    let id = format!("claude-{}", agent.pid());
    write_atomically(
        &claude.join(format!("sessions/{}.json", agent.pid())),
        &sessions_file(agent.pid(), &token, "busy", None),
    );
    append(
        &claude.join(format!("projects/-w/{id}.jsonl")),
        &prompt_line(),
    );
    let thread = "12345678-48e5-7151-b535-fa0e4e9093ad";
    append(
        &codex.join(format!(
            "sessions/2026/11/29/rollout-2026-11-29T19-07-14-{thread}.jsonl"
        )),
        &rollout_line(
            "session_meta",
            serde_json::json!({"id": thread, "cwd": "/p", "source": "cli"}),
        ),
    );
    d.wait_for(&id, "the sessions file beside a FIFO", |s| {
        s.state == SessionState::Working
    })
    .await;
    d.wait_for(&id, "the transcript beside a FIFO", |s| {
        s.transcript_path.is_some()
    })
    .await;
    d.wait_for(thread, "the rollout beside a FIFO", |_| true)
        .await;
    tokio::time::timeout(Duration::from_secs(5), d.stop())
        .await
        .expect("the feeds stop when cancelled");
}

#[cfg(unix)] // FIFOs and SIGTERM are unix's
#[test]
fn the_daemon_discovers_beside_fifos_and_exits_on_sigterm_within_its_bound() {
    let world = common::World::new().with_env("AGENT_TRAY_PID_WATCH_INTERVAL_MS", "300");
    let (claude, codex) = (world.path().join("claude"), world.path().join("codex"));
    let _fifos = fifos_like_agent_files(&claude, &codex);
    let daemon = world.start_daemon();
    std::thread::sleep(Duration::from_millis(500));
    let agent = Sleeper::spawn();
    let token = agent_tray::process::start_token(agent.pid()).unwrap();
    let id = format!("claude-{}", agent.pid());
    write_atomically(
        &claude.join(format!("sessions/{}.json", agent.pid())),
        &sessions_file(agent.pid(), &token, "idle", None),
    );
    assert!(
        common::wait_until(Duration::from_secs(15), || world.state_of(&id).is_some()).is_some(),
        "the sessions file beside the FIFOs was never discovered: {}",
        daemon.log_text()
    );
    let log = daemon.log.clone();
    let asked = Instant::now();
    let status = daemon.terminate();
    assert!(
        status.is_some_and(|s| s.success()),
        "no clean exit within 10 s of SIGTERM ({status:?}): {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    eprintln!("daemon exited {:?} after SIGTERM", asked.elapsed());
}
