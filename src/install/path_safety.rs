//! Whether a program is safe to hand to the agents: nobody but its user (or root) can replace it.
//!
//! `install` writes this binary's path into hooks that the agents run, as the user, on every
//! event; `notify` and the login entry do the same. If the binary, or any folder on its path,
//! can be written by another local user, that user can swap the program and run their code as
//! this user, silently and forever. So the whole path is checked, the file and every folder up
//! to `/`, both as given and after symlinks are resolved:
//! - a folder writable by its group or by everyone is refused unless it has the sticky bit
//!   (`/tmp`: others cannot rename or delete what they do not own there);
//! - a file writable by its group or by everyone is refused;
//! - anything owned by another user who is not root is refused (its owner can chmod it).
//!
//! Symlinks themselves are not judged (their mode means nothing and nobody can re-point one in
//! place; replacing one takes write access to its folder, which is checked). A path that does
//! not exist yet is not judged either: its folders decide.
//!
//! The decision is pure over an injected `lstat` ([`check_with`]); [`check`] runs it on the
//! real file system.

#[cfg(unix)]
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// What the check needs to know of one path (from `lstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathFacts {
    /// The permission bits, with set-id and sticky (`st_mode & 0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub is_dir: bool,
    pub is_symlink: bool,
}

impl PathFacts {
    #[cfg(unix)]
    fn of(meta: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        PathFacts {
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            is_dir: meta.is_dir(),
            is_symlink: meta.file_type().is_symlink(),
        }
    }
}

/// Why a path on the way to the program is unsafe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weakness {
    /// Group- or world-writable (a folder without the sticky bit).
    WritableByOthers { mode: u32 },
    /// Owned by a user who is neither this one nor root.
    OwnedByAnotherUser { uid: u32 },
    /// Could not be examined.
    Unreadable { error: String },
}

impl std::fmt::Display for Weakness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Weakness::WritableByOthers { mode } => {
                let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
                    (true, true) => "its group and every user",
                    (true, false) => "its group",
                    _ => "every user",
                };
                write!(f, "writable by {who} (mode {mode:04o})")
            }
            Weakness::OwnedByAnotherUser { uid } => {
                write!(f, "owned by another user (uid {uid})")
            }
            Weakness::Unreadable { error } => write!(f, "impossible to check ({error})"),
        }
    }
}

/// A program that others could replace: which path on the way is weak, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{culprit} is {weakness}, so another local user could replace {program} with a program of their own, which would then run as you")]
pub struct InsecurePath {
    pub program: PathBuf,
    /// The file or folder at fault.
    pub culprit: PathBuf,
    pub weakness: Weakness,
}

impl InsecurePath {
    /// What to do about it, in a sentence.
    pub fn fix(&self) -> String {
        match self.weakness {
            Weakness::OwnedByAnotherUser { .. } => format!(
                "put the program in a folder that you (or root) own and only you can write, such as ~/.local/bin, or have {} owned by you or root",
                self.culprit.display()
            ),
            _ => format!(
                "put the program in a folder only you can write, such as ~/.local/bin, or run `chmod go-w {}`",
                crate::install::shell_quote(&self.culprit.display().to_string())
            ),
        }
    }
}

/// Checks `program` on the real file system, as the current user. (Windows: a program under the
/// user's profile or Program Files is guarded by the folders' access lists, which this check
/// does not read; nothing is refused there.)
#[cfg(windows)]
pub fn check(_program: &Path) -> Result<(), InsecurePath> {
    Ok(())
}

/// Checks `program` on the real file system, as the current user.
#[cfg(unix)]
pub fn check(program: &Path) -> Result<(), InsecurePath> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let resolved = fs::canonicalize(program).ok();
    check_with(program, resolved.as_deref(), me, &|p| {
        fs::symlink_metadata(p).map(|m| PathFacts::of(&m))
    })
}

/// The pure check: `program` and, when it differs, its symlink-free form `resolved`, each with
/// every folder above it, judged from `lstat` as `probe` tells it, for user `me`.
pub fn check_with(
    program: &Path,
    resolved: Option<&Path>,
    me: u32,
    probe: &dyn Fn(&Path) -> io::Result<PathFacts>,
) -> Result<(), InsecurePath> {
    let mut seen: Vec<&Path> = Vec::new();
    for start in std::iter::once(program).chain(resolved) {
        for path in start.ancestors().filter(|p| !p.as_os_str().is_empty()) {
            if seen.contains(&path) {
                continue;
            }
            seen.push(path);
            let fail = |weakness| InsecurePath {
                program: program.to_path_buf(),
                culprit: path.to_path_buf(),
                weakness,
            };
            let facts = match probe(path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(fail(Weakness::Unreadable {
                        error: e.to_string(),
                    }))
                }
            };
            if facts.is_symlink {
                continue;
            }
            if facts.uid != 0 && facts.uid != me {
                return Err(fail(Weakness::OwnedByAnotherUser { uid: facts.uid }));
            }
            let others_write = facts.mode & 0o022 != 0;
            let sticky = facts.mode & 0o1000 != 0;
            if others_write && !(facts.is_dir && sticky) {
                return Err(fail(Weakness::WritableByOthers { mode: facts.mode }));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const ME: u32 = 1000;

    fn dir(mode: u32, uid: u32) -> PathFacts {
        PathFacts {
            mode,
            uid,
            is_dir: true,
            is_symlink: false,
        }
    }
    fn file(mode: u32, uid: u32) -> PathFacts {
        PathFacts {
            mode,
            uid,
            is_dir: false,
            is_symlink: false,
        }
    }

    /// A file system of `(path, facts)`; anything else does not exist.
    fn judge(
        entries: &[(&str, PathFacts)],
        program: &str,
        resolved: Option<&str>,
    ) -> Result<(), InsecurePath> {
        let fs: HashMap<PathBuf, PathFacts> = entries
            .iter()
            .map(|(p, f)| (PathBuf::from(p), *f))
            .collect();
        check_with(
            Path::new(program),
            resolved.map(Path::new),
            ME,
            &|p: &Path| {
                fs.get(p)
                    .copied()
                    .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
            },
        )
    }

    /// A made-up file system: (path, facts).
    type FakeFs = Vec<(&'static str, PathFacts)>;

    fn home(bin_dir: PathFacts, bin: PathFacts) -> FakeFs {
        vec![
            ("/", dir(0o755, 0)),
            ("/home", dir(0o755, 0)),
            ("/home/me", dir(0o750, ME)),
            ("/home/me/bin", bin_dir),
            ("/home/me/bin/agent-tray", bin),
        ]
    }

    #[test]
    fn a_program_only_its_user_or_root_can_replace_is_accepted() {
        let ok = home(dir(0o755, ME), file(0o755, ME));
        assert_eq!(judge(&ok, "/home/me/bin/agent-tray", None), Ok(()));
        let root_owned = home(dir(0o755, 0), file(0o755, 0));
        assert_eq!(judge(&root_owned, "/home/me/bin/agent-tray", None), Ok(()));
        // A sticky world-writable folder (/tmp) holding a folder of ours is fine.
        let tmp = vec![
            ("/", dir(0o755, 0)),
            ("/tmp", dir(0o1777, 0)),
            ("/tmp/mine", dir(0o700, ME)),
            ("/tmp/mine/agent-tray", file(0o755, ME)),
        ];
        assert_eq!(judge(&tmp, "/tmp/mine/agent-tray", None), Ok(()));
    }

    #[test]
    fn a_writable_folder_or_file_or_a_stranger_owner_anywhere_on_the_path_is_refused() {
        let cases: Vec<(FakeFs, &str, Weakness)> = vec![
            (
                home(dir(0o777, ME), file(0o755, ME)),
                "/home/me/bin",
                Weakness::WritableByOthers { mode: 0o777 },
            ),
            (
                home(dir(0o775, ME), file(0o755, ME)),
                "/home/me/bin",
                Weakness::WritableByOthers { mode: 0o775 },
            ),
            (
                home(dir(0o755, ME), file(0o757, ME)),
                "/home/me/bin/agent-tray",
                Weakness::WritableByOthers { mode: 0o757 },
            ),
            (
                // The sticky bit protects a folder's entries, not a file's contents.
                home(dir(0o755, ME), file(0o1777, ME)),
                "/home/me/bin/agent-tray",
                Weakness::WritableByOthers { mode: 0o1777 },
            ),
            (
                home(dir(0o755, 1001), file(0o755, ME)),
                "/home/me/bin",
                Weakness::OwnedByAnotherUser { uid: 1001 },
            ),
            (
                home(dir(0o755, ME), file(0o755, 1001)),
                "/home/me/bin/agent-tray",
                Weakness::OwnedByAnotherUser { uid: 1001 },
            ),
        ];
        for (fs, culprit, weakness) in cases {
            let err = judge(&fs, "/home/me/bin/agent-tray", None).unwrap_err();
            assert_eq!(err.culprit, Path::new(culprit), "{err}");
            assert_eq!(err.weakness, weakness, "{err}");
        }
        // Higher up counts too: a world-writable /home.
        let mut fs = home(dir(0o755, ME), file(0o755, ME));
        fs[1] = ("/home", dir(0o777, 0));
        let err = judge(&fs, "/home/me/bin/agent-tray", None).unwrap_err();
        assert_eq!(err.culprit, Path::new("/home"));
        assert!(
            err.to_string()
                .contains("writable by its group and every user (mode 0777)"),
            "{err}"
        );
        assert!(err.fix().contains("chmod go-w /home"), "{}", err.fix());
    }

    #[test]
    fn a_symlink_is_judged_by_its_folder_and_its_target() {
        // ~/bin/agent-tray -> /srv/shared/agent-tray: the link's folder is fine, the target's
        // is world-writable.
        let mut fs = home(
            dir(0o755, ME),
            PathFacts {
                mode: 0o777,
                uid: ME,
                is_dir: false,
                is_symlink: true,
            },
        );
        fs.push(("/srv", dir(0o755, 0)));
        fs.push(("/srv/shared", dir(0o777, 0)));
        fs.push(("/srv/shared/agent-tray", file(0o755, ME)));
        let err = judge(
            &fs,
            "/home/me/bin/agent-tray",
            Some("/srv/shared/agent-tray"),
        )
        .unwrap_err();
        assert_eq!(err.culprit, Path::new("/srv/shared"));
        // The same link to a safe place is fine: the link's own mode 0777 means nothing.
        fs.pop();
        fs.pop();
        fs.push(("/srv/shared", dir(0o755, 0)));
        fs.push(("/srv/shared/agent-tray", file(0o755, ME)));
        assert_eq!(
            judge(
                &fs,
                "/home/me/bin/agent-tray",
                Some("/srv/shared/agent-tray")
            ),
            Ok(())
        );
    }
}
