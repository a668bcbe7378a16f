//! The remotes the user configured: `remotes.json` in the data folder, replaced atomically.
//!
//! Names and destinations are checked here, once, because both travel further: a name is shown
//! in the window and in alerts (as text), a destination becomes one `ssh` argument and a word of
//! a copied command line. A destination may never begin with `-` (it would be an `ssh` option)
//! and holds only the characters `ssh` destinations use.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic_file::{AtomicWrite, AtomicWriteError, Current};

/// The file's format version.
const FILE_VERSION: u32 = 1;
/// The longest remote name, in bytes.
pub const MAX_NAME_LEN: usize = 64;
/// The longest destination, in bytes.
pub const MAX_DESTINATION_LEN: usize = 255;
/// At most this many remotes (each is one `ssh` process).
pub const MAX_REMOTES: usize = 32;

/// One configured remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RemoteEntry {
    /// What the tray calls it (`host` in `list --json`).
    pub name: String,
    /// As `ssh` takes it: an alias of `~/.ssh/config`, `user@host`, `ssh://user@host:port`.
    pub destination: String,
}

/// `remotes.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemotesFile {
    #[serde(default = "file_version")]
    pub v: u32,
    #[serde(default)]
    pub remotes: Vec<RemoteEntry>,
}

fn file_version() -> u32 {
    FILE_VERSION
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteConfigError {
    #[error("a remote name is 1 to {MAX_NAME_LEN} ASCII letters, digits, '-', '_' or '.', beginning with a letter or a digit; {0:?} is not")]
    BadName(String),
    #[error("{0:?} is not an ssh destination this accepts: a host alias, user@host or ssh://user@host:port, at most {MAX_DESTINATION_LEN} bytes of letters, digits and @ . _ - : / [ ] %, not beginning with '-'")]
    BadDestination(String),
    #[error("a remote named {0:?} exists already; `agent-tray remote remove {0}` first")]
    Exists(String),
    #[error("no remote is named {0:?}")]
    Unknown(String),
    #[error("at most {MAX_REMOTES} remotes")]
    TooMany,
    #[error("{path} is not a remotes file this version reads: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

/// Where the remotes are kept.
pub fn remotes_path(data_dir: &Path) -> PathBuf {
    data_dir.join("remotes.json")
}

pub fn validate_name(name: &str) -> Result<(), RemoteConfigError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(RemoteConfigError::BadName(
            name.escape_default().to_string(),
        ))
    }
}

pub fn validate_destination(destination: &str) -> Result<(), RemoteConfigError> {
    let ok = !destination.is_empty()
        && destination.len() <= MAX_DESTINATION_LEN
        && !destination.starts_with('-')
        && destination.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'@' | b'.' | b'_' | b'-' | b':' | b'/' | b'[' | b']' | b'%'
                )
        });
    if ok {
        Ok(())
    } else {
        Err(RemoteConfigError::BadDestination(
            destination.escape_default().to_string(),
        ))
    }
}

impl RemotesFile {
    /// Parses the file's text; every entry is checked as `add` checks it.
    pub fn parse(text: &[u8], path: &Path) -> Result<Self, RemoteConfigError> {
        let corrupt = |reason: String| RemoteConfigError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let file: RemotesFile = serde_json::from_slice(text).map_err(|e| corrupt(e.to_string()))?;
        if file.v > FILE_VERSION {
            return Err(corrupt(format!(
                "version {} is newer than this agent-tray reads ({FILE_VERSION})",
                file.v
            )));
        }
        for entry in &file.remotes {
            validate_name(&entry.name).map_err(|e| corrupt(e.to_string()))?;
            validate_destination(&entry.destination).map_err(|e| corrupt(e.to_string()))?;
        }
        Ok(file)
    }

    pub fn find(&self, name: &str) -> Option<&RemoteEntry> {
        self.remotes.iter().find(|r| r.name == name)
    }

    /// Adds a remote: checked, unique by name, within the cap.
    pub fn add(&mut self, name: &str, destination: &str) -> Result<(), RemoteConfigError> {
        validate_name(name)?;
        validate_destination(destination)?;
        if self.find(name).is_some() {
            return Err(RemoteConfigError::Exists(name.to_string()));
        }
        if self.remotes.len() >= MAX_REMOTES {
            return Err(RemoteConfigError::TooMany);
        }
        self.remotes.push(RemoteEntry {
            name: name.to_string(),
            destination: destination.to_string(),
        });
        Ok(())
    }

    pub fn remove(&mut self, name: &str) -> Result<RemoteEntry, RemoteConfigError> {
        let at = self
            .remotes
            .iter()
            .position(|r| r.name == name)
            .ok_or_else(|| RemoteConfigError::Unknown(name.to_string()))?;
        Ok(self.remotes.remove(at))
    }
}

/// The file and the bytes it was read from (`None`: there is none yet), for a guarded rewrite.
pub fn load(path: &Path) -> Result<(RemotesFile, Option<Vec<u8>>), RemoteConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok((RemotesFile::parse(&bytes, path)?, Some(bytes))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((RemotesFile::default(), None)),
        Err(source) => Err(RemoteConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `file` in place of what [`load`] read (`read`), refusing if someone changed it since.
pub fn save(path: &Path, file: &RemotesFile, read: Option<&[u8]>) -> Result<(), RemoteConfigError> {
    let mut text = serde_json::to_vec_pretty(file).map_err(|e| RemoteConfigError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    text.push(b'\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| RemoteConfigError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let current = match read {
        Some(bytes) => Current::Bytes(bytes),
        None => Current::Absent,
    };
    AtomicWrite::new(path)
        .expect_current(current)
        .write(&text)?;
    Ok(())
}

/// Adds a remote to the file at `path`.
pub fn add(path: &Path, name: &str, destination: &str) -> Result<(), RemoteConfigError> {
    let (mut file, read) = load(path)?;
    file.add(name, destination)?;
    save(path, &file, read.as_deref())
}

/// Removes a remote from the file at `path`; returns what it was.
pub fn remove(path: &Path, name: &str) -> Result<RemoteEntry, RemoteConfigError> {
    let (mut file, read) = load(path)?;
    let entry = file.remove(name)?;
    save(path, &file, read.as_deref())?;
    Ok(entry)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn destinations_that_ssh_would_read_as_options_or_a_shell_as_syntax_are_refused() {
        for good in [
            "devbox",
            "dev@devbox.example",
            "ssh://dev@10.0.0.2:2222",
            "dev@[fe80::1%eth0]",
        ] {
            assert!(validate_destination(good).is_ok(), "{good}");
        }
        for bad in [
            "-oProxyCommand=sh -c evil",
            "",
            "a b",
            "x;id",
            "$(id)",
            "h`id`",
            "h\n",
            "a'b",
            &"h".repeat(MAX_DESTINATION_LEN + 1),
        ] {
            assert!(
                validate_destination(bad).is_err(),
                "{bad:?} must be refused"
            );
        }
        assert!(validate_name("build-server_2").is_ok());
        for bad in ["", "-x", "a b", "<b>x</b>", &"n".repeat(MAX_NAME_LEN + 1)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn add_list_remove_round_trip_through_the_file_and_names_stay_unique() {
        let dir = tempfile::tempdir().unwrap();
        let path = remotes_path(dir.path());
        add(&path, "devbox", "dev@devbox").unwrap();
        add(&path, "ci", "ci.example").unwrap();
        assert!(matches!(
            add(&path, "devbox", "other"),
            Err(RemoteConfigError::Exists(_))
        ));
        let (file, _) = load(&path).unwrap();
        assert_eq!(file.remotes.len(), 2);
        assert_eq!(file.find("ci").unwrap().destination, "ci.example");
        assert_eq!(remove(&path, "devbox").unwrap().destination, "dev@devbox");
        assert!(matches!(
            remove(&path, "devbox"),
            Err(RemoteConfigError::Unknown(_))
        ));
        let (file, _) = load(&path).unwrap();
        assert_eq!(file.remotes.len(), 1);
    }

    #[test]
    fn a_hand_edited_file_with_a_hostile_destination_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = remotes_path(dir.path());
        std::fs::write(
            &path,
            r#"{"v":1,"remotes":[{"name":"x","destination":"-oProxyCommand=touch /tmp/p"}]}"#,
        )
        .unwrap();
        assert!(matches!(
            load(&path),
            Err(RemoteConfigError::Corrupt { .. })
        ));
    }
}
