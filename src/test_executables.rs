//! Executables written for tests so that running them cannot fail with "Text file busy".
//!
//! Shared by the unit tests (`crate::test_executables`) and the integration tests
//! (`tests/common`, which includes this file by path): one copy of the reason and the fix.

#![allow(clippy::expect_used)]

use std::path::Path;
#[cfg(not(windows))]
use std::process::{Command, Stdio};

/// Writes an executable file from a child process (`sh -c 'cat > file'`), never from this one.
///
/// Tests run on many threads of one process. A file this process held open for writing
/// would be inherited by any child another test thread forks at that moment, until that child
/// execs; running the file then fails with "Text file busy" (ETXTBSY). Written by another
/// process, the file's write descriptor never exists here, so no fork can carry it.
///
/// Windows has no "Text file busy", nor a mode bit: the file is written here directly.
#[cfg(windows)]
pub(crate) fn write_executable(path: &Path, contents: &[u8]) {
    std::fs::write(path, contents).expect("write the executable");
}

#[cfg(not(windows))]
pub(crate) fn write_executable(path: &Path, contents: &[u8]) {
    use std::io::Write;
    let mut writer = Command::new("sh")
        .arg("-c")
        .arg("cat > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh runs");
    writer
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(contents)
        .expect("the writer reads its stdin");
    let status = writer.wait().expect("the writer ends");
    assert!(status.success(), "writing {} failed", path.display());
}

/// Copies `from` to `to` (Windows: here, directly; see [`write_executable`]).
#[cfg(windows)]
#[allow(dead_code)]
pub(crate) fn copy_executable(from: &Path, to: &Path) {
    std::fs::copy(from, to).expect("copy the executable");
}

/// Copies `from` to an executable `to` from a child process; see [`write_executable`] for why.
/// (Only Linux's real-process tests copy one.)
#[cfg(not(windows))]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn copy_executable(from: &Path, to: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg("cat < \"$1\" > \"$2\" && chmod 755 \"$2\"")
        .arg("sh")
        .arg(from)
        .arg(to)
        .stdin(Stdio::null())
        .status()
        .expect("sh runs");
    assert!(
        status.success(),
        "copying {} to {} failed",
        from.display(),
        to.display()
    );
}
