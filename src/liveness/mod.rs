//! Is a process alive, and is it still the same process?
//!
//! [`process_exists`] asks the kernel with `kill(pid, 0)`: only `ESRCH` means gone (`EPERM` means
//! the process exists but belongs to someone else). [`process_start_token`] is an opaque
//! identity, compared only for equality, that tells a pid recycled onto an unrelated process from
//! the one we saw: on Linux field 22 (`starttime`) of `/proc/<pid>/stat`, parsed after the LAST
//! `)` because the command name in parentheses may itself contain spaces and parentheses; on
//! macOS the process start time from the kernel (`proc_pidinfo`), with `ps -o lstart=` under
//! `LC_ALL=C TZ=UTC` as a fallback so the text never depends on the caller's locale.
//!
//! Only the engine reads tokens, in its own environment; no client ever sends one.

pub mod pid_watcher;

/// True when a process with this pid exists (whoever owns it) and has not exited.
///
/// A zombie has exited — its files and locks are released, it will never run again — and only
/// waits for its parent to reap it; `kill(0)` still succeeds on it. A tmux pane whose agent was
/// killed keeps it as a zombie for a while, so a zombie counts as gone.
pub fn process_exists(pid: u32) -> bool {
    signal_zero_succeeds(pid) && !is_zombie(pid)
}

/// True when `/proc/<pid>/stat` says the process has exited and waits to be reaped (`Z`, `X`).
#[cfg(target_os = "linux")]
pub fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| state_from_stat(&stat).map(|s| s == "Z" || s == "X"))
        .unwrap_or(false)
}

/// Elsewhere a zombie cannot be told without more machinery; `kill(0)` is the answer.
#[cfg(not(target_os = "linux"))]
pub fn is_zombie(_pid: u32) -> bool {
    false
}

/// Field 3 (the state letter) of a `/proc/<pid>/stat` line.
pub fn state_from_stat(stat: &str) -> Option<&str> {
    stat[stat.rfind(')')? + 1..].split_ascii_whitespace().next()
}

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
pub fn process_start_token(pid: u32) -> Option<String> {
    if pid == 0 {
        return None;
    }
    platform_start_token(pid)
}

#[cfg(target_os = "linux")]
fn platform_start_token(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_time_from_stat(&stat).map(str::to_string)
}

/// Field 22 of a `/proc/<pid>/stat` line. Fields after the command name start at field 3.
pub fn start_time_from_stat(stat: &str) -> Option<&str> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let field = after_name.split_ascii_whitespace().nth(22 - 3)?;
    field.bytes().all(|b| b.is_ascii_digit()).then_some(field)
}

/// The parent pid and command name from `/proc/<pid>/stat` (Linux), for walking process trees.
pub fn parent_and_name_from_stat(stat: &str) -> Option<(u32, &str)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?;
    let ppid = stat[close + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ppid, name))
}

#[cfg(target_os = "macos")]
fn platform_start_token(pid: u32) -> Option<String> {
    kernel_start_time(pid).or_else(|| ps_start_time(pid))
}

#[cfg(target_os = "macos")]
fn kernel_start_time(pid: u32) -> Option<String> {
    let raw = libc::c_int::try_from(pid).ok()?;
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
    (written == size).then(|| format!("{}.{:06}", info.pbi_start_tvsec, info.pbi_start_tvusec))
}

#[cfg(target_os = "macos")]
fn ps_start_time(pid: u32) -> Option<String> {
    let out = std::process::Command::new("ps")
        .args(["-o", "lstart=", "-p", &pid.to_string()])
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_start_token(_pid: u32) -> Option<String> {
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn this_process_exists_and_has_a_stable_token() {
        let me = std::process::id();
        assert!(process_exists(me));
        let token = process_start_token(me);
        assert!(token.is_some());
        assert_eq!(token, process_start_token(me));
    }

    #[test]
    fn pid_zero_and_absurd_pids_are_never_alive() {
        assert!(!process_exists(0));
        assert!(!process_exists(u32::MAX));
        assert_eq!(process_start_token(0), None);
    }

    #[test]
    fn a_process_owned_by_another_user_counts_as_alive() {
        // pid 1 exists on every Unix; as non-root kill() says EPERM, as root it succeeds.
        assert!(process_exists(1));
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_cannot_shift_the_fields() {
        let stat = "4242 (evil ) 1 2 3 (x) S) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200";
        assert_eq!(start_time_from_stat(stat), Some("987654"));
        assert_eq!(
            parent_and_name_from_stat(stat),
            Some((1, "evil ) 1 2 3 (x) S"))
        );
    }

    #[test]
    fn a_truncated_stat_line_gives_no_token() {
        assert_eq!(start_time_from_stat("12 (sh) S 1 12"), None);
        assert_eq!(start_time_from_stat("no parens at all"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_child_not_yet_reaped_counts_as_gone() {
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(process_exists(pid));
        child.kill().unwrap();
        let start = std::time::Instant::now();
        while !is_zombie(pid) {
            assert!(start.elapsed().as_secs() < 5, "never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_exists(pid), "a zombie has exited");
        child.wait().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_linux_token_is_field_22_of_proc_stat() {
        let me = std::process::id();
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        assert_eq!(process_start_token(me).as_deref(), Some(fields[19]));
    }
}
