//! A real OpenSSH server for tests: `sshd` from Debian's `openssh-server`, run by the test on
//! 127.0.0.1 on a free port, with its own host key, config and an authorized key made for the
//! test. The "remote host" is this same user with another `HOME`/`AGENT_TRAY_HOME`: sshd's
//! `SetEnv` gives every session the remote world's environment (and a `PATH` that has, or lacks,
//! `agent-tray`). The client side gets an ssh config (`-F`, through `AGENT_TRAY_SSH_CONFIG`) with
//! its own identity and known-hosts file: the real user's `~/.ssh` is never read or written.
//!
//! Every process started here is ended by pid: the listener and all its descendants (the
//! per-connection sshd processes and the remote commands they run) with SIGKILL, which is also
//! how a test cuts the link.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// A free TCP port on 127.0.0.1 (bound, then released for sshd to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "agent-tray-test",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("ssh-keygen runs (openssh-client; scripts/setup.sh --test installs it)");
    assert!(status.success(), "ssh-keygen failed");
}

fn user_name() -> String {
    // SAFETY: getpwuid with our own uid; the record is read at once and copied.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        assert!(!pw.is_null(), "no passwd entry for this uid");
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

/// The keys and client config of one test: shared by every server it starts.
pub struct SshKeys {
    pub dir: PathBuf,
    pub client_config: PathBuf,
}

impl SshKeys {
    /// Keys under `dir` (made if missing).
    pub fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        keygen(&dir.join("host_key"));
        keygen(&dir.join("id"));
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        std::fs::write(dir.join("known_hosts"), "").unwrap();
        std::fs::write(dir.join("ssh_config"), "").unwrap();
        SshKeys {
            dir: dir.to_path_buf(),
            client_config: dir.join("ssh_config"),
        }
    }

    /// Adds `Host alias` for a server on `port` to the client config, and its host key.
    pub fn add_host(&self, alias: &str, port: u16) {
        let host_pub = std::fs::read_to_string(self.dir.join("host_key.pub")).unwrap();
        let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
        let mut known = std::fs::read_to_string(self.dir.join("known_hosts")).unwrap();
        known.push_str(&format!("[127.0.0.1]:{port} {} {}\n", key[0], key[1]));
        std::fs::write(self.dir.join("known_hosts"), known).unwrap();
        let mut config = std::fs::read_to_string(&self.client_config).unwrap();
        config.push_str(&format!(
            "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {id}\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  ConnectTimeout 5\n  LogLevel ERROR\n",
            user = user_name(),
            id = self.dir.join("id").display(),
            known = self.dir.join("known_hosts").display(),
        ));
        std::fs::write(&self.client_config, config).unwrap();
    }
}

/// A running sshd on 127.0.0.1:`port`, giving its sessions `env`.
pub struct Sshd {
    pub port: u16,
    pub child: Option<Child>,
    pub config: PathBuf,
    pub log: PathBuf,
}

impl Sshd {
    /// Writes the server config (`name` keeps two servers' files apart) and starts it.
    pub fn start(keys: &SshKeys, name: &str, port: u16, env: &[(String, String)]) -> Self {
        if unsafe { libc::geteuid() } == 0 {
            // sshd run by root wants its privilege-separation folder (the package's service
            // makes it at boot; nothing here starts that service).
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        let set_env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let config = keys.dir.join(format!("sshd_config_{name}"));
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile none\nAuthorizedKeysFile {auth}\nStrictModes no\nPubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\nAllowUsers {user}\nPermitUserEnvironment no\nX11Forwarding no\nAllowTcpForwarding no\nPrintMotd no\nPrintLastLog no\nLogLevel VERBOSE\nSetEnv {set_env}\n",
                host_key = keys.dir.join("host_key").display(),
                auth = keys.dir.join("authorized_keys").display(),
                user = user_name(),
                set_env = set_env.join(" "),
            ),
        )
        .unwrap();
        let log = keys.dir.join(format!("sshd_{name}.log"));
        let mut sshd = Sshd {
            port,
            child: None,
            config,
            log,
        };
        sshd.restart();
        sshd
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill)).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-f")
            .arg(&self.config)
            .arg("-E")
            .arg(&self.log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd runs (openssh-server; scripts/setup.sh --test installs it)");
        self.child = Some(child);
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("sshd exited with {status}: {}", self.log_text());
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not listen on {}: {}",
                self.port,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many logins the server accepted so far.
    pub fn logins(&self) -> usize {
        self.log_text().matches("Accepted publickey").count()
    }

    /// SIGKILL to the listener and every process under it (the connections and what they run):
    /// the link is cut as a crash or a dropped network would cut it.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id();
        let mut victims = descendants(pid);
        victims.push(pid);
        for p in victims {
            // SAFETY: signalling a process this test started (or one it started in turn).
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        let _ = child.wait();
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every process below `root`, deepest last, from `/proc/*/stat`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent pid is the second field after the command's closing parenthesis.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (child, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            found.push(*child);
            frontier.push(*child);
        }
    }
    found
}

/// The folder holding the `agent-tray` binary under test: what a remote's PATH needs.
pub fn bin_dir() -> PathBuf {
    super::common::bin().parent().unwrap().to_path_buf()
}
