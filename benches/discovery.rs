//! What discovery costs on a big `~/.claude/projects` (issue 4, "Scale and cost").
//!
//! Builds a synthetic tree — by default 10,000 transcripts, 2 GB in total, 50 of them live — in a
//! temporary folder (never the real `~/.claude`), starts the real feeds on it (file watcher,
//! rescans, registry), and reports:
//! - the first scan's time, and the peak RSS after it (`VmHWM` of `/proc/self/status`);
//! - while 50 sessions append a line a second (written by a *child* process, so that its work is
//!   not counted): CPU used per minute by this process (`getrusage`), bytes read per appended byte
//!   (the feeds count what they read; the live files' growth is what was appended);
//! - RSS at the start and the end of that run (10 minutes by default), to show it stays flat.
//!
//! ```text
//! cargo bench --bench discovery                        # full size, 10 minutes
//! cargo bench --bench discovery -- --files 500 --total-mb 50 --minutes 1
//! ```
//! Options: `--files N`, `--total-mb N`, `--live N`, `--minutes F`, `--dir PATH` (where the tree
//! goes; default a temporary folder under /var/tmp, removed at the end).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use agent_tray::engine::agent_feeds::spawn_all;
use agent_tray::feeds::{FeedConfig, FeedDirs, FeedSink, FeedStats};
use agent_tray::model::Agent;
use agent_tray::registry::SessionsRegistry;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
struct Options {
    files: usize,
    total_mb: u64,
    live: usize,
    minutes: f64,
    dir: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        files: 10_000,
        total_mb: 2048,
        live: 50,
        minutes: 10.0,
        dir: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--files" => o.files = value.parse().unwrap_or(o.files),
            "--total-mb" => o.total_mb = value.parse().unwrap_or(o.total_mb),
            "--live" => o.live = value.parse().unwrap_or(o.live),
            "--minutes" => o.minutes = value.parse().unwrap_or(o.minutes),
            "--dir" => o.dir = Some(PathBuf::from(value)),
            // `cargo bench` passes `--bench`; ignore it and anything unknown.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o.live = o.live.min(o.files);
    o
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--append-worker") {
        append_worker(&args[2..]);
        return;
    }
    let o = options();
    let tmp;
    let root = match &o.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("agent-tray-bench-")
                .tempdir_in("/var/tmp")
                .unwrap_or_else(|e| die(&format!("temp dir: {e}")));
            tmp.path().to_path_buf()
        }
    };
    println!("machine: {} cores, {}", cores(), os_name());
    println!(
        "tree: {} transcripts, {} MB in total, {} live, in {}",
        o.files,
        o.total_mb,
        o.live,
        root.display()
    );
    let started = Instant::now();
    let live_files = build_tree(&root, &o);
    println!("tree built in {:.1} s", started.elapsed().as_secs_f64());
    drop_page_cache_hint(&root);

    let rss_before = status_kb("VmRSS");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("runtime: {e}")));
    let registry = Arc::new(SessionsRegistry::new());
    let config = FeedConfig::new(
        FeedDirs::default()
            .with(Agent::Claude, vec![root.join("claude")])
            .with(Agent::Codex, vec![root.join("codex")]),
        registry.config().session_ttl,
    );
    let stats = config.stats.of("feed_claude_transcripts");
    let token = CancellationToken::new();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let tasks = runtime.block_on(async {
        let tasks = spawn_all(
            FeedSink::without_history(registry.clone()),
            config,
            token.clone(),
        );
        while FeedStats::get(&stats.rescans) < 1 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tasks
    });
    let first_scan = t0.elapsed();
    let first_scan_cpu = cpu_seconds() - cpu0;
    println!(
        "first scan: {:.0} ms wall, {:.0} ms CPU; {} sessions shown; {} files followed; {} bytes read",
        first_scan.as_secs_f64() * 1000.0,
        first_scan_cpu * 1000.0,
        registry.live_count(),
        FeedStats::get(&stats.followed),
        FeedStats::get(&stats.bytes_read)
    );
    println!(
        "RSS: {} KiB before the feeds, peak (VmHWM) {} KiB after the first scan",
        rss_before,
        status_kb("VmHWM")
    );

    // The append phase, written by a child process so its CPU is not ours.
    let list = root.join("live.txt");
    let text: Vec<String> = live_files.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(&list, text.join("\n")).unwrap_or_else(|e| die(&format!("{e}")));
    let mut worker = std::process::Command::new(std::env::current_exe().unwrap_or_default())
        .arg("--append-worker")
        .arg(&list)
        .spawn()
        .unwrap_or_else(|e| die(&format!("append worker: {e}")));
    let size0: u64 = live_files.iter().map(|p| file_len(p)).sum();
    let read0 = FeedStats::get(&stats.bytes_read);
    let cpu_start = cpu_seconds();
    let rss_start = status_kb("VmRSS");
    let run = Duration::from_secs_f64(o.minutes * 60.0);
    let t_run = Instant::now();
    println!(
        "append phase: {} sessions x 1 line/s for {:.1} min; RSS at start {} KiB",
        live_files.len(),
        o.minutes,
        rss_start
    );
    runtime.block_on(async {
        let mut last_report = Instant::now();
        let mut last_cpu = cpu_start;
        while t_run.elapsed() < run {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if last_report.elapsed() >= Duration::from_secs(60) {
                let cpu = cpu_seconds();
                println!(
                    "  t={:>4.0}s  RSS {} KiB  CPU this minute {:.2} s  sessions {}  bad lines {}",
                    t_run.elapsed().as_secs_f64(),
                    status_kb("VmRSS"),
                    cpu - last_cpu,
                    registry.live_count(),
                    FeedStats::get(&stats.bad_lines),
                );
                last_cpu = cpu;
                last_report = Instant::now();
            }
        }
    });
    let _ = worker.kill();
    let _ = worker.wait();
    // Let the last appends be read.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(500)).await });
    let elapsed_min = t_run.elapsed().as_secs_f64() / 60.0;
    let cpu = cpu_seconds() - cpu_start;
    let appended = live_files.iter().map(|p| file_len(p)).sum::<u64>() - size0;
    let read = FeedStats::get(&stats.bytes_read) - read0;
    println!(
        "CPU: {:.2} s per minute ({:.2}% of one core)",
        cpu / elapsed_min,
        cpu / (elapsed_min * 60.0) * 100.0
    );
    println!(
        "bytes read per appended byte: {:.3} ({} read, {} appended)",
        read as f64 / appended.max(1) as f64,
        read,
        appended
    );
    println!(
        "RSS: {} KiB at the start of the run, {} KiB at the end; peak {} KiB; {} event batches, {} rescans, {} paths dropped",
        rss_start,
        status_kb("VmRSS"),
        status_kb("VmHWM"),
        FeedStats::get(&stats.event_batches),
        FeedStats::get(&stats.rescans),
        FeedStats::get(&stats.dropped_paths),
    );
    token.cancel();
    runtime.block_on(async {
        for (_, t) in tasks {
            let _ = t.await;
        }
    });
    if o.dir.is_none() {
        println!("removing the tree");
    }
}

/// A plausible transcript line of about `len` bytes.
fn line(kind: usize, at: &str, len: usize) -> String {
    let pad = "x".repeat(len.saturating_sub(300));
    match kind % 3 {
        0 => format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{pad}\"}},\"timestamp\":\"{at}\",\"cwd\":\"/home/dev/proj\",\"gitBranch\":\"main\",\"sessionId\":\"s\"}}\n"
        ),
        1 => format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"msg_1\",\"model\":\"claude-opus-5-5\",\"content\":[{{\"type\":\"text\",\"text\":\"{pad}\"}}]}},\"timestamp\":\"{at}\",\"cwd\":\"/home/dev/proj\"}}\n"
        ),
        _ => format!(
            "{{\"type\":\"system\",\"subtype\":\"turn_duration\",\"durationMs\":1310,\"timestamp\":\"{at}\",\"cwd\":\"/home/dev/proj\"}}\n"
        ),
    }
}

/// Writes the tree; returns the live files.
fn build_tree(root: &Path, o: &Options) -> Vec<PathBuf> {
    let projects = root.join("claude/projects");
    let total = o.total_mb * 1024 * 1024;
    // Sizes skewed like real ones: most small, a few very large (weights 1..=20, squared).
    let weights: Vec<u64> = (0..o.files)
        .map(|i| {
            let w = (i * 7919 % 20 + 1) as u64;
            w * w
        })
        .collect();
    let sum: u64 = weights.iter().sum();
    let block: String = (0..64)
        .map(|k| line(k, "2026-10-01T10:00:00.000Z", 1000))
        .collect();
    let now = SystemTime::now();
    let mut live = Vec::new();
    for (i, w) in weights.iter().enumerate() {
        let dir = projects.join(format!("-home-dev-project-{}", i % 200));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{e}")));
        let path = dir.join(format!("{:08x}-0000-4000-8000-{:012x}.jsonl", i, i));
        let size = total * w / sum;
        let mut f = std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(&path).unwrap_or_else(|e| die(&format!("{e}"))),
        );
        let mut written = 0u64;
        while written < size {
            f.write_all(block.as_bytes())
                .unwrap_or_else(|e| die(&format!("{e}")));
            written += block.len() as u64;
        }
        let file = f
            .into_inner()
            .unwrap_or_else(|e| die(&format!("{}", e.error())));
        let is_live = i % (o.files / o.live.max(1)).max(1) == 0 && live.len() < o.live;
        // Old files are spread over 30 days; live ones were touched just now.
        let age = if is_live {
            Duration::from_secs(5)
        } else {
            Duration::from_secs(3600 + (i as u64 * 2593) % (30 * 86400))
        };
        file.set_modified(now - age)
            .unwrap_or_else(|e| die(&format!("{e}")));
        if is_live {
            live.push(path);
        }
    }
    live
}

/// The append worker: one line a second to each live file, spread over the second.
fn append_worker(args: &[String]) {
    let list =
        std::fs::read_to_string(args.first().cloned().unwrap_or_default()).unwrap_or_default();
    let mut files: Vec<std::fs::File> = list
        .lines()
        .filter_map(|p| std::fs::OpenOptions::new().append(true).open(p).ok())
        .collect();
    let n = files.len().max(1) as u32;
    let mut k = 0usize;
    loop {
        let second = Instant::now();
        for (i, f) in files.iter_mut().enumerate() {
            let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let _ = f.write_all(line(k + i, &at, 600).as_bytes());
            std::thread::sleep(Duration::from_secs(1) / n);
        }
        k += 1;
        if let Some(rest) = Duration::from_secs(1).checked_sub(second.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Not measured off unix: the discovery bench runs on Linux.
#[cfg(not(unix))]
fn cpu_seconds() -> f64 {
    0.0
}

/// User + system CPU of this process, in seconds.
#[cfg(unix)]
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A `kB` line of `/proc/self/status`.
fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(key)?
                .trim_start_matches(':')
                .trim()
                .trim_end_matches(" kB")
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown OS".into())
}

/// The first scan is measured with a warm page cache (the tree was just written); say so.
fn drop_page_cache_hint(_root: &Path) {
    println!("(page cache: warm — the tree was just written)");
}

fn die(msg: &str) -> ! {
    eprintln!("discovery bench: {msg}");
    std::process::exit(1)
}
