//! `agent-tray open`, what the desktop entry runs, as a real process: it hands over to a running
//! app on its private socket, or becomes the app beside it by `exec` (same pid, same arguments),
//! and says what to install when there is no app at all.

// The running app is played by a unix socket here; on Windows the same protocol runs over the
// pipe (src/app_launch/instance.rs) and is type-checked.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[allow(unused_imports)]
use common::RetryStart;

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{bin, World};

/// The CLI copied into `dir` (as a package installs it), optionally with a stand-in app beside
/// it that writes its pid and arguments to `started` in the world's tray folder.
fn install_cli(world: &World, with_app: bool) -> PathBuf {
    let dir = world.path().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let cli = dir.join("agent-tray");
    common::copy_executable(&bin(), &cli);
    if with_app {
        common::write_executable(
            &dir.join("agent-tray-desktop"),
            b"#!/bin/sh\necho \"$$ $*\" > \"$AGENT_TRAY_HOME/started\"\n",
        );
    }
    cli
}

/// `cli open args…` in the world, with a PATH that holds no app.
fn open(world: &World, cli: &Path, args: &[&str]) -> (u32, Output) {
    let mut command = Command::new(cli);
    command
        .arg("open")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in &world.envs {
        command.env(k, v);
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

#[test]
fn with_no_app_running_open_becomes_the_app_beside_it_with_the_same_arguments() {
    let world = World::new();
    let cli = install_cli(&world, true);
    let (pid, out) = open(&world, &cli, &["--background"]);
    assert!(out.status.success(), "{out:?}");
    let started = std::fs::read_to_string(world.tray_home().join("started")).unwrap();
    // exec, not a child: the app runs in the launcher's own process.
    assert_eq!(started.trim(), format!("{pid} --background"));
}

#[test]
fn a_running_app_takes_the_request_and_nothing_is_started() {
    let world = World::new();
    let cli = install_cli(&world, true);
    let runtime = world.tray_home().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let listener = UnixListener::bind(runtime.join("desktop.sock")).unwrap();
    let app = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut line = [0u8; 64];
        let n = stream.read(&mut line).unwrap();
        stream.write_all(b"ok\n").unwrap();
        String::from_utf8_lossy(&line[..n]).into_owned()
    });
    let (_, out) = open(&world, &cli, &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(app.join().unwrap(), "open\n");
    assert!(
        !world.tray_home().join("started").exists(),
        "the app beside was not started"
    );
}

#[test]
fn with_no_app_anywhere_open_says_what_to_install_and_an_unknown_argument_is_refused() {
    let world = World::new();
    let cli = install_cli(&world, false);
    let (_, out) = open(&world, &cli, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agent-tray-desktop") && err.contains("install"),
        "{err}"
    );
    let (_, out) = open(&world, &cli, &["--window"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: agent-tray open"));
    // A stale socket (an app that crashed) is no answer: still no app to start.
    let runtime = world.tray_home().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    drop(UnixListener::bind(runtime.join("desktop.sock")).unwrap());
    let (_, out) = open(&world, &cli, &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}
