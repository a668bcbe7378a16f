//! "Launch at login" with the app installed under a path holding a space or a `%` (issue 27
//! point 10): the entry the autostart plugin writes (its `auto-launch`, driven here directly so
//! the program's path can be chosen), fixed by the app, then started as a desktop session starts
//! it, by GLib's desktop-entry launcher (`gio launch`, what GNOME's session uses). Before the fix
//! the plugin's unquoted `Exec=` split the path at the space and nothing started.
// Unix only: a desktop entry run by GLib.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

#[test]
fn a_login_entry_for_a_path_with_a_space_and_a_percent_starts_the_app() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // This binary runs this one test: its HOME is the plugin's.
    std::env::set_var("HOME", &home);
    let folder = tmp.path().join("My Apps 100% $HOME");
    std::fs::create_dir_all(&folder).unwrap();
    let marker = tmp.path().join("started");
    let program = folder.join("agent-tray-desktop");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();

    let launcher = auto_launch::AutoLaunchBuilder::new()
        .set_app_name(agent_tray_desktop::autostart::ENTRY_NAME)
        .set_app_path(&program.display().to_string())
        .set_args(&[agent_tray_desktop::autostart::BACKGROUND_ARG])
        .build()
        .unwrap();
    launcher.enable().unwrap();
    let entry = agent_tray_desktop::autostart::linux_entry(&home);
    assert!(entry.exists(), "the plugin wrote {}", entry.display());
    agent_tray_desktop::autostart::quote_exec_line(&entry, &program).unwrap();
    let text = std::fs::read_to_string(&entry).unwrap();
    assert!(
        text.contains("Name=agent-tray"),
        "the plugin's other lines stay: {text}"
    );

    let launched = std::process::Command::new("gio")
        .arg("launch")
        .arg(&entry)
        .env("HOME", &home)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run gio ({e}): install libglib2.0-bin (scripts/setup.sh --test)")
        });
    assert!(
        launched.status.success(),
        "gio launch: {}\n{text}",
        String::from_utf8_lossy(&launched.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let args = std::fs::read_to_string(&marker)
        .unwrap_or_else(|_| panic!("the entry did not start the app:\n{text}"));
    assert_eq!(args.trim(), "--background");
}
