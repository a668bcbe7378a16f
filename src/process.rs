//! What the engine knows of other processes: one place for every probe the feeds, the hook's pid
//! walk and the pid watcher share.
//!
//! Why one module: "which process is this, and is it still the same one" must get the same answer
//! everywhere. The hook reports a pid found by walking up its ancestry, the file feeds believe a
//! sessions file only while the pid it names has the start token it recorded, the pid watcher
//! ends a session when that token changes. Three parsers of `/proc/<pid>/stat` that disagreed on
//! a command name holding `)` would make those feeds take sessions from each other.
//!
//! - **`/proc/<pid>/stat`** is parsed once, by [`parse_stat`]: the command name sits between the
//!   FIRST `(` and the LAST `)` (it may itself hold spaces, parentheses, even newlines), and the
//!   numbered fields start after that last `)`.
//! - **Alive** ([`exists`]) is `kill(pid, 0)` where only `ESRCH` means gone (`EPERM`: it exists
//!   but is someone else's), and not a zombie: a zombie has exited and only waits to be reaped (a
//!   tmux pane keeps a killed agent as one for a while).
//! - **The start token** ([`start_token`]) is an opaque identity, compared only for equality, that
//!   tells a pid recycled onto another process from the one we saw: on Linux field 22
//!   (`starttime`) of the stat line; on macOS the kernel's start time (`proc_pidinfo`), with
//!   `ps -o lstart=` under `LC_ALL=C TZ=UTC` as a fallback so the text never depends on a locale;
//!   both read as whole seconds since the epoch, so either source gives the same token.
//! - **macOS** has no `/proc`: [`read_stat`] reads `proc_pidinfo` ([`bsd_stat`]), the arguments and
//!   environment come from `sysctl(KERN_PROCARGS2)` ([`parse_procargs2`]); every parse is a pure
//!   function tested on Linux, so only the few system calls are left to the Mac.
//!   Only the engine reads tokens, in its own environment; no client ever sends one.
//! - **[`ProcessTable`]** is the seam every decision is written against: the real table
//!   ([`SystemProcesses`]) reads `/proc`; tests script trees, deaths and recycled pids.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

/// What one `/proc/<pid>/stat` line says that the engine uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// The kernel's command name (`comm`, at most 15 bytes on Linux).
    pub comm: String,
    /// Field 3: `R`, `S`, `Z`, …
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 22, clock ticks after boot; absent from a truncated line.
    pub start_time: Option<u64>,
}

impl Stat {
    /// Exited, waiting to be reaped: it will never run again.
    pub fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// Parses a `/proc/<pid>/stat` line. `None` for anything that is not one (no name in
/// parentheses, no state or parent after it).
pub fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?;
    let mut fields = line.get(close + 1..)?.split_ascii_whitespace();
    let mut state_chars = fields.next()?.chars();
    let state = state_chars.next()?;
    if state_chars.next().is_some() {
        return None;
    }
    let ppid = fields.next()?.parse().ok()?;
    // Fields 5..=21 come before the start time: skip 17 of them.
    let start_time = fields.nth(22 - 5).and_then(|f| {
        f.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| f.parse().ok())
            .flatten()
    });
    Some(Stat {
        comm: comm.to_string(),
        state,
        ppid,
        start_time,
    })
}

/// A pid's stat line, read from `/proc`.
#[cfg(target_os = "linux")]
pub fn read_stat(pid: u32) -> Option<Stat> {
    if pid == 0 {
        return None;
    }
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// macOS has no `/proc`: the same facts come from the kernel's `proc_pidinfo(PROC_PIDTBSDINFO)`.
#[cfg(target_os = "macos")]
pub fn read_stat(pid: u32) -> Option<Stat> {
    let raw = libc::c_int::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: proc_bsdinfo is plain data; all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: `info` is a writable proc_bsdinfo of exactly `size` bytes.
    let written = unsafe {
        libc::proc_pidinfo(
            raw,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    if written != size {
        return None;
    }
    let bytes = |chars: &[libc::c_char]| chars.iter().map(|c| *c as u8).collect::<Vec<u8>>();
    Some(bsd_stat(&BsdInfo {
        comm: bytes(&info.pbi_comm),
        name: bytes(&info.pbi_name),
        zombie: info.pbi_status == libc::SZOMB,
        ppid: info.pbi_ppid,
        start_secs: info.pbi_start_tvsec,
    }))
}

/// Elsewhere there is neither `/proc` nor `proc_pidinfo`.
/// Windows: the snapshot's parent and executable name, the creation time as the start time, and
/// `Z` for a process that has exited while a handle still holds it.
#[cfg(windows)]
pub fn read_stat(pid: u32) -> Option<Stat> {
    let entry = crate::win_process::entry(pid)?;
    let handle = crate::win_process::ProcessHandle::open(pid).ok();
    Some(Stat {
        comm: comm_of_exe(&entry.exe),
        state: if handle.as_ref().is_some_and(|h| h.has_exited()) {
            'Z'
        } else {
            'R'
        },
        ppid: entry.ppid,
        start_time: handle.and_then(|h| h.creation_ticks()),
    })
}

/// The command name of a Windows executable, as unix would show it: the file name without its
/// `.exe` (in any case), so `node.exe` and `Claude.EXE` match the names the agents' adapters
/// know (`node`, `claude`).
pub fn comm_of_exe(exe: &str) -> String {
    let name = exe.rsplit(['\\', '/']).next().unwrap_or(exe);
    let stem = match name.len().checked_sub(4) {
        Some(at) if name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(".exe") => {
            &name[..at]
        }
        _ => name,
    };
    stem.to_string()
}

/// The pid of this process's parent (the agent or the shell that ran the hook).
pub fn parent_of_this_process() -> Option<u32> {
    #[cfg(unix)]
    {
        Some(std::os::unix::process::parent_id())
    }
    #[cfg(windows)]
    {
        crate::win_process::parent_of(std::process::id())
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub fn read_stat(_pid: u32) -> Option<Stat> {
    None
}

/// What macOS's `proc_bsdinfo` says of a process, as plain bytes and numbers (so the reading of
/// it is a pure function, tested on any platform).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsdInfo {
    /// `pbi_comm`: the executable's name, cut at 16 bytes, NUL-padded.
    pub comm: Vec<u8>,
    /// `pbi_name`: the longer name (32 bytes), empty for some processes.
    pub name: Vec<u8>,
    /// `pbi_status == SZOMB`.
    pub zombie: bool,
    pub ppid: u32,
    /// `pbi_start_tvsec`: when it started, in seconds since the epoch.
    pub start_secs: u64,
}

/// Reads a `proc_bsdinfo` as a [`Stat`]: the longer name when there is one, the state `Z` for a
/// zombie, and the start token in seconds (see [`kernel_start_token`]).
pub fn bsd_stat(info: &BsdInfo) -> Stat {
    let c_text = |raw: &[u8]| {
        let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
        String::from_utf8_lossy(&raw[..end]).into_owned()
    };
    let name = c_text(&info.name);
    Stat {
        comm: if name.is_empty() {
            c_text(&info.comm)
        } else {
            name
        },
        state: if info.zombie { 'Z' } else { 'S' },
        ppid: info.ppid,
        start_time: Some(info.start_secs),
    }
}

/// The macOS start token: the kernel's start time in whole seconds since the epoch. Whole
/// seconds because the `ps -o lstart=` fallback ([`parse_ps_lstart`]) has no finer clock, and
/// both sources must give the same token for the same process, or a session would be ended
/// the day one probe fails and the other answers. (macOS hands out pids in order up to 99998:
/// a pid is not reused within the second it was started.)
pub fn kernel_start_token(start_secs: u64) -> String {
    start_secs.to_string()
}

/// Reads `ps -o lstart= -p <pid>` run under `LC_ALL=C TZ=UTC` (`Tue Dec  1 03:06:27 2026`) as
/// the same token as [`kernel_start_token`]. `None` for anything else (an empty answer: gone).
pub fn parse_ps_lstart(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [_weekday, month, day, time, year] = words[..] else {
        return None;
    };
    let parsed = chrono::NaiveDateTime::parse_from_str(
        &format!("{month} {day} {time} {year}"),
        "%b %d %H:%M:%S %Y",
    )
    .ok()?;
    u64::try_from(parsed.and_utc().timestamp())
        .ok()
        .map(kernel_start_token)
}

/// Reads `ps -o tty= -p <pid>` (`ttys003`, or `??` for none) as the terminal's device path,
/// which Terminal.app and iTerm2 report for each tab (`/dev/ttys003`).
pub fn parse_ps_tty(text: &str) -> Option<String> {
    let tty = text.trim();
    let usable = !tty.is_empty()
        && tty != "??"
        && tty != "?"
        && tty.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'/');
    usable.then(|| {
        if tty.starts_with("/dev/") {
            tty.to_string()
        } else {
            format!("/dev/{tty}")
        }
    })
}

/// The terminal device a process runs on (`/dev/ttys003`, `/dev/pts/4`), when it has one.
#[cfg(target_os = "macos")]
pub fn tty(pid: u32) -> Option<String> {
    let out = std::process::Command::new("ps")
        .args(["-o", "tty=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_ps_tty(&String::from_utf8_lossy(&out.stdout))
}

/// The terminal device a process runs on: where its standard input points, when that is one.
#[cfg(not(target_os = "macos"))]
pub fn tty(pid: u32) -> Option<String> {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/0")).ok()?;
    let link = link.to_str()?;
    (link.starts_with("/dev/pts/") || link.starts_with("/dev/tty")).then(|| link.to_string())
}

/// True when a process with this pid exists (whoever owns it) and has not exited.
#[cfg(unix)]
pub fn exists(pid: u32) -> bool {
    signal_zero_succeeds(pid) && !is_zombie(pid)
}

/// True when a process with this pid exists (whoever owns it) and has not exited.
#[cfg(windows)]
pub fn exists(pid: u32) -> bool {
    crate::win_process::exists(pid)
}

/// True when the stat line says the process has exited and waits to be reaped (`Z`, `X`).
/// Where zombies cannot be told (no `/proc`), `kill(0)` is the answer and this is false.
pub fn is_zombie(pid: u32) -> bool {
    read_stat(pid).is_some_and(|s| s.is_zombie())
}

#[cfg(unix)]
fn signal_zero_succeeds(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        // kill(0, ..) and kill(-n, ..) address process groups, not a process.
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks; nothing is delivered.
    let rc = unsafe { libc::kill(raw, 0) };
    if rc == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The process's identity token, or `None` when it cannot be read (gone, or not permitted).
pub fn start_token(pid: u32) -> Option<String> {
    if pid == 0 {
        return None;
    }
    platform_start_token(pid)
}

#[cfg(target_os = "linux")]
fn platform_start_token(pid: u32) -> Option<String> {
    read_stat(pid)?.start_time.map(|t| t.to_string())
}

#[cfg(target_os = "macos")]
fn platform_start_token(pid: u32) -> Option<String> {
    read_stat(pid)
        .and_then(|s| s.start_time)
        .map(kernel_start_token)
        .or_else(|| ps_start_time(pid))
}

#[cfg(target_os = "macos")]
fn ps_start_time(pid: u32) -> Option<String> {
    let out = std::process::Command::new("ps")
        .args(["-o", "lstart=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_ps_lstart(&String::from_utf8_lossy(&out.stdout))
}

/// Windows: the creation time in 100 ns ticks, prefixed so it never equals a unix token.
#[cfg(windows)]
fn platform_start_token(pid: u32) -> Option<String> {
    crate::win_process::creation_ticks(pid).map(|t| format!("win:{t}"))
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn platform_start_token(_pid: u32) -> Option<String> {
    None
}

/// What probing one pid found: the pid watcher's and the reaper's view of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidProbe {
    Gone,
    /// Alive, with its identity token when it could be read.
    Alive {
        token: Option<String>,
    },
}

/// Probes a real pid: alive (not a zombie) and its token.
pub fn probe_pid(pid: u32) -> PidProbe {
    if exists(pid) {
        PidProbe::Alive {
            token: start_token(pid),
        }
    } else {
        PidProbe::Gone
    }
}

/// The pid watcher's probe for many pids in a row: one `/proc/<pid>/stat` read per pid into
/// buffers reused across pids, answering both "alive and not a zombie" and "which start token"
/// from that one line ([`probe_pid`] reads it twice and signals once). Elsewhere it is
/// [`probe_pid`].
#[derive(Debug, Default)]
pub struct StatProbe {
    #[cfg(target_os = "linux")]
    path: String,
    #[cfg(target_os = "linux")]
    line: Vec<u8>,
}

/// What [`StatProbe`] reads at once: a stat line is a few hundred bytes (a longer one is read
/// in more steps).
#[cfg(target_os = "linux")]
const STAT_READ: usize = 1024;

impl StatProbe {
    /// Probes one pid; same answers as [`probe_pid`].
    #[cfg(target_os = "linux")]
    pub fn probe(&mut self, pid: u32) -> PidProbe {
        use std::fmt::Write as _;
        use std::io::Read as _;
        if pid == 0 || libc::pid_t::try_from(pid).is_err() {
            return PidProbe::Gone;
        }
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/stat");
        // Open, read, close and nothing else: `read_to_string` would also `statx` the file for
        // a size hint and read once more to see its end. The kernel writes the whole line in
        // one read when the buffer holds it, so a line that ends in a newline is complete.
        if self.line.len() < STAT_READ {
            self.line.resize(STAT_READ, 0);
        }
        let read = std::fs::File::open(&self.path).and_then(|mut f| {
            let mut len = 0;
            loop {
                if len == self.line.len() {
                    self.line.resize(len * 2, 0);
                }
                match f.read(&mut self.line[len..]) {
                    Ok(0) => break,
                    Ok(n) => {
                        len += n;
                        if self.line[len - 1] == b'\n' {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(len)
        });
        match read {
            Ok(len) => match stat_state_and_start(&self.line[..len]) {
                Some((b'Z' | b'X', _)) => PidProbe::Gone,
                Some((_, start_time)) => PidProbe::Alive {
                    token: start_time.map(|t| t.to_string()),
                },
                None => probe_pid(pid),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => PidProbe::Gone,
            // Hidden or unreadable `/proc` (hidepid), or it died between open and read: ask the
            // slow way, which knows EPERM from ESRCH.
            Err(_) => probe_pid(pid),
        }
    }

    /// Probes one pid; same answers as [`probe_pid`].
    #[cfg(not(target_os = "linux"))]
    pub fn probe(&mut self, pid: u32) -> PidProbe {
        probe_pid(pid)
    }
}

/// The state (field 3) and start time (field 22) of a stat line, read from its bytes: the same
/// answers as [`parse_stat`] for what a probe needs, with no copy of the name, no text check (a
/// name need not be UTF-8) and nothing allocated, since the watcher's tick reads one line per
/// watched pid.
#[cfg(target_os = "linux")]
fn stat_state_and_start(line: &[u8]) -> Option<(u8, Option<u64>)> {
    let close = line.iter().rposition(|b| *b == b')')?;
    if !line[..close].contains(&b'(') {
        return None;
    }
    let mut fields = line[close + 1..]
        .split(u8::is_ascii_whitespace)
        .filter(|f| !f.is_empty());
    let [state] = fields.next()? else {
        return None;
    };
    let ppid = fields.next()?;
    std::str::from_utf8(ppid).ok()?.parse::<u32>().ok()?;
    // Fields 5..=21 come before the start time: skip 17 of them.
    let start_time = fields.nth(22 - 5).and_then(|f| {
        f.iter().try_fold(0u64, |n, b| {
            b.is_ascii_digit()
                .then(|| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
                .flatten()
        })
    });
    Some((*state, start_time))
}

/// At most this many command-line arguments are kept: the walk needs the launcher's script.
const MAX_CMDLINE_ARGS: usize = 8;

/// Splits a NUL-separated `/proc/<pid>/cmdline`, keeping the first few non-empty arguments.
pub fn parse_cmdline(raw: &[u8]) -> Vec<String> {
    raw.split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .take(MAX_CMDLINE_ARGS)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Splits a NUL-separated `/proc/<pid>/environ` into `KEY=value` pairs (entries without `=` are
/// skipped; bytes that are not UTF-8 are replaced).
pub fn parse_environ(raw: &[u8]) -> Vec<(String, String)> {
    raw.split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (k, v) = entry.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// A process's environment, readable for the user's own processes (`None` elsewhere).
#[cfg(target_os = "linux")]
pub fn environ(pid: u32) -> Option<Vec<(String, String)>> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .map(|raw| parse_environ(&raw))
}

/// macOS: the environment from `sysctl(KERN_PROCARGS2)` (the user's own processes only).
#[cfg(target_os = "macos")]
pub fn environ(pid: u32) -> Option<Vec<(String, String)>> {
    procargs2(pid).map(|p| p.env)
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn environ(_pid: u32) -> Option<Vec<(String, String)>> {
    None
}

/// What macOS's `KERN_PROCARGS2` buffer holds: the arguments and the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcArgs {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Parses a `KERN_PROCARGS2` buffer: `argc` (a native-endian 32-bit int), the executable's path,
/// NUL padding, then `argc` NUL-ended arguments and the `KEY=value` environment up to an empty
/// string. Arguments are capped like [`parse_cmdline`]'s. `None` for a buffer too short to hold
/// `argc` or one that claims a negative count.
pub fn parse_procargs2(raw: &[u8]) -> Option<ProcArgs> {
    let argc = i32::from_ne_bytes(raw.get(..4)?.try_into().ok()?);
    let argc = usize::try_from(argc).ok()?;
    let rest = raw.get(4..)?;
    // Skip the executable path, then the NULs that pad it.
    let path_end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    let mut strings = rest[path_end..]
        .split(|b| *b == 0)
        .skip_while(|s| s.is_empty());
    let mut args = Vec::new();
    for arg in strings.by_ref().take(argc) {
        if args.len() < MAX_CMDLINE_ARGS {
            args.push(String::from_utf8_lossy(arg).into_owned());
        }
    }
    let env = strings
        .take_while(|s| !s.is_empty())
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (k, v) = entry.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    Some(ProcArgs { args, env })
}

/// The `KERN_PROCARGS2` buffer of a process (macOS), parsed.
#[cfg(target_os = "macos")]
pub fn procargs2(pid: u32) -> Option<ProcArgs> {
    let raw = libc::c_int::try_from(pid).ok().filter(|p| *p > 0)?;
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, raw];
    let mut size: libc::size_t = 0;
    // SAFETY: a null buffer asks only for the size, written to `size`.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 || size == 0 {
        return None;
    }
    let mut buffer = vec![0u8; size];
    // SAFETY: `buffer` is writable for `size` bytes; the kernel writes at most that and updates
    // `size` to what it wrote.
    let rc = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buffer.as_mut_ptr().cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    buffer.truncate(size);
    parse_procargs2(&buffer)
}

/// When a process started, as a wall-clock time (Linux: boot time plus `starttime` ticks).
#[cfg(target_os = "linux")]
pub fn started_at(pid: u32) -> Option<DateTime<Utc>> {
    let ticks = read_stat(pid)?.start_time?;
    let btime: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    let millis = i64::try_from(ticks.checked_mul(1000)? / hz).ok()?;
    DateTime::from_timestamp(btime, 0)?.checked_add_signed(chrono::Duration::milliseconds(millis))
}

/// Windows: the creation time (100 ns ticks since 1601).
#[cfg(windows)]
pub fn started_at(pid: u32) -> Option<DateTime<Utc>> {
    windows_ticks_to_time(crate::win_process::creation_ticks(pid)?)
}

/// A Windows FILETIME (100 ns ticks since 1601-01-01 UTC) as a wall-clock time.
pub fn windows_ticks_to_time(ticks: u64) -> Option<DateTime<Utc>> {
    const TICKS_1601_TO_1970: u64 = 116_444_736_000_000_000;
    let since_epoch = ticks.checked_sub(TICKS_1601_TO_1970)?;
    let secs = i64::try_from(since_epoch / 10_000_000).ok()?;
    let nanos = u32::try_from((since_epoch % 10_000_000) * 100).ok()?;
    DateTime::from_timestamp(secs, nanos)
}

#[cfg(not(any(target_os = "linux", windows)))]
pub fn started_at(_pid: u32) -> Option<DateTime<Utc>> {
    None
}

/// What a walk up the process tree needs of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub ppid: u32,
    /// The kernel's command name (`comm`, at most 15 bytes on Linux).
    pub comm: String,
}

/// A view of the process table: the seam every decision about processes is written against, so
/// tests script trees, deaths and recycled pids. [`SystemProcesses`] is the real one.
pub trait ProcessTable {
    /// Parent and command name.
    fn info(&self, pid: u32) -> Option<ProcInfo>;
    /// The command line (asked only of launchers such as `node`).
    fn cmdline(&self, pid: u32) -> Option<Vec<String>>;
    /// Alive and not a zombie.
    fn exists(&self, pid: u32) -> bool;
    /// The opaque identity token, when it can be read.
    fn start_token(&self, pid: u32) -> Option<String>;
    /// Direct children, where the kernel lists them.
    fn children(&self, pid: u32) -> Vec<u32>;
}

/// `pid` and its ancestors, nearest first, at most `max` of them; stops at init, at a process
/// that cannot be read, and at a loop.
pub fn ancestry(table: &dyn ProcessTable, pid: u32, max: usize) -> Vec<(u32, ProcInfo)> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut current = pid;
    while chain.len() < max && current > 0 && seen.insert(current) {
        let Some(info) = table.info(current) else {
            break;
        };
        let parent = info.ppid;
        chain.push((current, info));
        if parent <= 1 {
            break;
        }
        current = parent;
    }
    chain
}

/// The real process table (`/proc` on Linux; `proc_pidinfo` and `KERN_PROCARGS2` on macOS;
/// liveness only elsewhere).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemProcesses;

impl ProcessTable for SystemProcesses {
    fn info(&self, pid: u32) -> Option<ProcInfo> {
        read_stat(pid).map(|s| ProcInfo {
            ppid: s.ppid,
            comm: s.comm,
        })
    }

    #[cfg(target_os = "linux")]
    fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .ok()
            .map(|raw| parse_cmdline(&raw))
    }

    #[cfg(target_os = "macos")]
    fn cmdline(&self, pid: u32) -> Option<Vec<String>> {
        procargs2(pid).map(|p| p.args)
    }

    // Windows: another process's command line lives in its memory (its PEB); not read. The
    // adapters tell agents by executable name there.
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    fn cmdline(&self, _pid: u32) -> Option<Vec<String>> {
        None
    }

    fn exists(&self, pid: u32) -> bool {
        exists(pid)
    }

    fn start_token(&self, pid: u32) -> Option<String> {
        start_token(pid)
    }

    #[cfg(windows)]
    fn children(&self, pid: u32) -> Vec<u32> {
        crate::win_process::children_of(pid)
    }

    #[cfg(not(windows))]
    fn children(&self, pid: u32) -> Vec<u32> {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .map(|text| {
                text.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_windows_executable_is_named_as_unix_would_name_it() {
        assert_eq!(comm_of_exe("node.exe"), "node");
        assert_eq!(comm_of_exe("Claude.EXE"), "Claude");
        assert_eq!(comm_of_exe(r"C:\Program Files\nodejs\node.exe"), "node");
        assert_eq!(comm_of_exe("codex"), "codex", "no extension: as it is");
        assert_eq!(comm_of_exe("x.exe.bak"), "x.exe.bak");
        assert_eq!(comm_of_exe(".exe"), "");
        assert_eq!(comm_of_exe("é.exe"), "é");
    }

    #[test]
    fn a_windows_filetime_is_the_same_instant_as_unix_time() {
        // 2026-12-04T00:00:00Z: seconds since 1970 times 10^7, plus 1601..1970 in ticks.
        let unix = 1_796_342_400_i64;
        let ticks = 116_444_736_000_000_000 + unix as u64 * 10_000_000 + 1_234_567;
        let at = windows_ticks_to_time(ticks).unwrap();
        assert_eq!(at.timestamp(), unix);
        assert_eq!(at.timestamp_subsec_nanos(), 123_456_700);
        assert_eq!(
            windows_ticks_to_time(0),
            None,
            "before 1970 is not a process start"
        );
    }
    use proptest::prelude::*;

    #[test]
    fn this_process_exists_and_has_a_stable_token() {
        let me = std::process::id();
        assert!(exists(me));
        let token = start_token(me);
        assert!(token.is_some());
        assert_eq!(token, start_token(me));
        assert_eq!(probe_pid(me), PidProbe::Alive { token });
    }

    #[test]
    fn the_reused_buffer_probe_answers_as_the_plain_probe_does() {
        let mut probe = StatProbe::default();
        let me = std::process::id();
        for pid in [me, 0, u32::MAX, 1, me] {
            assert_eq!(probe.probe(pid), probe_pid(pid), "pid {pid}");
        }
        let mut child = crate::test_support::spawn_sleeper(600);
        let pid = child.id();
        assert!(matches!(
            probe.probe(pid),
            PidProbe::Alive { token: Some(_) }
        ));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(probe.probe(pid), PidProbe::Gone);
    }

    #[test]
    fn pid_zero_and_absurd_pids_are_never_alive() {
        assert!(!exists(0));
        assert!(!exists(u32::MAX));
        assert_eq!(start_token(0), None);
        assert_eq!(probe_pid(u32::MAX), PidProbe::Gone);
    }

    #[test]
    #[cfg(unix)] // pid 1 is init, always there and never ours
    fn a_process_owned_by_another_user_counts_as_alive() {
        // pid 1 exists on every Unix; as non-root kill() says EPERM, as root it succeeds.
        assert!(exists(1));
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_cannot_shift_the_fields() {
        let stat = "4242 (evil ) 1 2 3 (x) S) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200";
        let s = parse_stat(stat).unwrap();
        assert_eq!(s.start_time, Some(987654));
        assert_eq!((s.ppid, s.comm.as_str()), (1, "evil ) 1 2 3 (x) S"));
        assert_eq!(s.state, 'S');
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_probes_byte_parser_reads_state_and_start_as_parse_stat_does() {
        let me = std::fs::read_to_string(format!("/proc/{}/stat", std::process::id())).unwrap();
        let lines = [
            me.as_str(),
            "4242 (evil ) 1 2 3 (x) S) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200",
            "77 (zed) Z 1 77 77 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0",
            "1234 (a (weird) name) S 77 1234 1234 0 -1",
            "12 (sh) S",
            "12 (sh) SS 1",
            "12 (sh) S 99999999999 1",
            "12 (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999 0",
            "12 (sh) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12x 0",
            "no parens at all",
            ") backwards ( S 1",
        ];
        for line in lines {
            let expected = parse_stat(line).map(|s| (s.state as u8, s.start_time));
            assert_eq!(stat_state_and_start(line.as_bytes()), expected, "{line}");
        }
        // A name that is not UTF-8 (a process may name itself anything): still read, not
        // handed to the slow probe.
        let raw = b"9 (caf\xe9) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4321 0\n";
        assert_eq!(stat_state_and_start(raw), Some((b'R', Some(4321))));
    }

    #[test]
    fn a_truncated_stat_line_gives_parent_and_name_but_no_token() {
        let s = parse_stat("1234 (a (weird) name) S 77 1234 1234 0 -1").unwrap();
        assert_eq!(
            (s.ppid, s.comm.as_str(), s.start_time),
            (77, "a (weird) name", None)
        );
        assert_eq!(parse_stat("12 (sh) S"), None);
        assert_eq!(parse_stat("no parens at all"), None);
        assert_eq!(parse_stat(") backwards ( S 1"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_linux_token_is_field_22_of_proc_stat() {
        let me = std::process::id();
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        assert_eq!(start_token(me).as_deref(), Some(fields[19]));
        assert_eq!(
            SystemProcesses.info(me).map(|i| i.ppid),
            Some(std::os::unix::process::parent_id())
        );
        assert!(started_at(me).is_some_and(|t| t <= Utc::now()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_child_not_yet_reaped_is_a_zombie_and_counts_as_gone() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(exists(pid));
        child.kill().unwrap();
        let start = std::time::Instant::now();
        while !is_zombie(pid) {
            assert!(start.elapsed().as_secs() < 5, "never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!exists(pid), "a zombie has exited");
        assert!(!SystemProcesses.exists(pid));
        child.wait().unwrap();
    }

    #[test]
    fn environ_and_cmdline_split_on_nul() {
        assert_eq!(
            parse_environ(b"A=1\0TERM_PROGRAM=vscode\0junk\0B=x=y\0"),
            vec![
                ("A".to_string(), "1".to_string()),
                ("TERM_PROGRAM".to_string(), "vscode".to_string()),
                ("B".to_string(), "x=y".to_string()),
            ]
        );
        assert_eq!(
            parse_cmdline(b"node\0/x/cli.js\0\0--resume\0"),
            ["node", "/x/cli.js", "--resume"]
        );
    }

    #[test]
    fn a_macos_bsd_info_reads_as_a_stat_line_would() {
        let mut comm = b"claude".to_vec();
        comm.resize(16, 0);
        let mut info = BsdInfo {
            comm,
            name: b"claude code\0\0\0".to_vec(),
            zombie: false,
            ppid: 77,
            start_secs: 1_796_094_387,
        };
        assert_eq!(
            bsd_stat(&info),
            Stat {
                comm: "claude code".into(),
                state: 'S',
                ppid: 77,
                start_time: Some(1_796_094_387)
            }
        );
        info.name = vec![0; 32];
        info.zombie = true;
        let s = bsd_stat(&info);
        assert_eq!((s.comm.as_str(), s.is_zombie()), ("claude", true));
    }

    #[test]
    fn the_ps_fallback_gives_the_kernels_token_for_the_same_start() {
        // `ps -o lstart=` under LC_ALL=C TZ=UTC pads a one-digit day with a space.
        let start = chrono::DateTime::parse_from_rfc3339("2026-12-01T03:06:27Z")
            .unwrap()
            .timestamp();
        let kernel = kernel_start_token(u64::try_from(start).unwrap());
        assert_eq!(
            parse_ps_lstart("Tue Dec  1 03:06:27 2026\n").as_deref(),
            Some(kernel.as_str())
        );
        assert_eq!(kernel, "1796094387");
        assert_eq!(
            parse_ps_lstart("Mon Nov 30 23:59:59 2026"),
            Some("1796083199".into())
        );
        for gone in ["", "\n", "Tue Dec 1 2026", "mar. 1 déc. 03:06:27 2026 x"] {
            assert_eq!(parse_ps_lstart(gone), None, "{gone:?}");
        }
    }

    #[test]
    fn a_ps_tty_column_reads_as_a_device_path() {
        assert_eq!(parse_ps_tty("ttys003\n").as_deref(), Some("/dev/ttys003"));
        assert_eq!(parse_ps_tty(" pts/4 ").as_deref(), Some("/dev/pts/4"));
        assert_eq!(parse_ps_tty("??\n"), None, "no terminal");
        assert_eq!(parse_ps_tty(""), None, "gone");
        assert_eq!(parse_ps_tty("tty; rm -rf ~"), None);
    }

    #[test]
    fn a_procargs2_buffer_splits_into_arguments_and_environment() {
        let mut raw = 2i32.to_ne_bytes().to_vec();
        raw.extend_from_slice(b"/usr/local/bin/node\0\0\0\0node\0/x/cli.js\0");
        raw.extend_from_slice(b"TERM_PROGRAM=iTerm.app\0ITERM_SESSION_ID=w0t1p0:AB\0junk\0\0");
        raw.extend_from_slice(b"ptr_munge=\0executable_path=/usr/local/bin/node\0");
        let parsed = parse_procargs2(&raw).unwrap();
        assert_eq!(parsed.args, ["node", "/x/cli.js"]);
        assert_eq!(
            parsed.env,
            vec![
                ("TERM_PROGRAM".to_string(), "iTerm.app".to_string()),
                ("ITERM_SESSION_ID".to_string(), "w0t1p0:AB".to_string()),
            ],
            "the environment ends at the empty string; the apple strings after it are not in it"
        );
        assert_eq!(parse_procargs2(b"\x01\x00"), None, "too short for argc");
        assert_eq!(parse_procargs2(&(-1i32).to_ne_bytes()), None);
        assert_eq!(
            parse_procargs2(&0i32.to_ne_bytes()),
            Some(ProcArgs::default())
        );
    }

    struct Chain;
    impl ProcessTable for Chain {
        fn info(&self, pid: u32) -> Option<ProcInfo> {
            // 5 → 4 → 3 → 5 (a loop), and 9 → 1.
            let ppid = match pid {
                5 => 4,
                4 => 3,
                3 => 5,
                9 => 1,
                _ => return None,
            };
            Some(ProcInfo {
                ppid,
                comm: format!("p{pid}"),
            })
        }
        fn cmdline(&self, _: u32) -> Option<Vec<String>> {
            None
        }
        fn exists(&self, pid: u32) -> bool {
            self.info(pid).is_some()
        }
        fn start_token(&self, _: u32) -> Option<String> {
            None
        }
        fn children(&self, _: u32) -> Vec<u32> {
            Vec::new()
        }
    }

    #[test]
    fn ancestry_stops_at_init_at_a_loop_and_at_the_limit() {
        let pids = |v: Vec<(u32, ProcInfo)>| v.into_iter().map(|(p, _)| p).collect::<Vec<_>>();
        assert_eq!(pids(ancestry(&Chain, 5, 16)), [5, 4, 3]);
        assert_eq!(pids(ancestry(&Chain, 5, 2)), [5, 4]);
        assert_eq!(pids(ancestry(&Chain, 9, 16)), [9]);
        assert!(ancestry(&Chain, 77, 16).is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Outside input: any text at all, including what a hostile process names itself.
        #[test]
        fn any_text_parses_without_panicking(line in any::<String>()) {
            let _ = parse_stat(&line);
            let _ = parse_ps_lstart(&line);
            let _ = parse_ps_tty(&line);
        }

        #[test]
        fn any_procargs2_buffer_parses_without_panicking(raw in proptest::collection::vec(any::<u8>(), 0..4096)) {
            if let Some(p) = parse_procargs2(&raw) {
                prop_assert!(p.args.len() <= MAX_CMDLINE_ARGS);
            }
        }

        #[test]
        fn any_bytes_split_without_panicking_and_stay_bounded(raw in proptest::collection::vec(any::<u8>(), 0..4096)) {
            prop_assert!(parse_cmdline(&raw).len() <= MAX_CMDLINE_ARGS);
            let env = parse_environ(&raw);
            prop_assert!(env.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() <= raw.len() * 3);
        }

        /// A line written the kernel's way reads back whatever the command name holds.
        #[test]
        fn a_stat_line_round_trips_whatever_the_command_name(
            pid in 1u32..4_194_304,
            comm in "\\PC{0,15}",
            state in prop::sample::select(vec!['R', 'S', 'D', 'Z', 'T', 'X', 'I']),
            ppid in 0u32..4_194_304,
            start in any::<u64>(),
        ) {
            let line = format!(
                "{pid} ({comm}) {state} {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 {start} 1000 200\n"
            );
            let parsed = parse_stat(&line).unwrap();
            prop_assert_eq!(parsed, Stat { comm, state, ppid, start_time: Some(start) });
        }
    }
}
