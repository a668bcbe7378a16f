//! "Launch at login" moved from a hand-written module to `tauri-plugin-autostart`. A user who
//! had it on must still have it on after upgrading, with exactly one login entry: the plugin's,
//! starting the app with `--background` (two entries would start two copies at every login).
//!
//! The plugin finds the home through `HOME`, which a test cannot change inside its own process
//! without racing the other tests, so the app's start runs in a child process (this same test
//! binary, re-run on one test) with a temp `HOME` and `XDG_CONFIG_HOME`; the parent reads the
//! folders afterwards.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tray::registry::SessionsRegistry;
use agent_tray_desktop::ipc::{AppSettings, EngineStatus};
use agent_tray_desktop::settings::{SettingsApplier, SettingsStore};
use tauri::test::{mock_builder, mock_context, noop_assets};

const CHILD: &str = "AGENT_TRAY_TEST_AUTOSTART_CHILD";

/// What the old module wrote (its exact text, for `/usr/bin/agent-tray-desktop`).
const OLD_ENTRY: &str = "[Desktop Entry]\nType=Application\nName=Agent Tray\nComment=Every Claude Code and Codex session on this machine, in the tray\nExec=/usr/bin/agent-tray-desktop --background\nIcon=agent-tray-desktop\nTerminal=false\nX-GNOME-Autostart-enabled=true\n";

/// In the child: the app's start, as `start_background` runs it (migration, then the settings
/// applier's first pass), against the plugin for real.
fn start_the_app_in_this_process(settings_file: &Path) {
    let app = mock_builder()
        .plugin(agent_tray_desktop::autostart::plugin())
        .build(mock_context(noop_assets()))
        .unwrap_or_else(|e| panic!("{e}"));
    let registry = Arc::new(SessionsRegistry::new());
    agent_tray_desktop::manage_state(
        &app,
        registry.clone(),
        Default::default(),
        SettingsStore::load(settings_file.to_path_buf()),
        EngineStatus::Running {
            socket: "/tmp/test.sock".into(),
        },
        settings_file.with_file_name("logs"),
    );
    let handle = app.handle();
    let login = agent_tray_desktop::autostart::prepare(handle);
    assert!(login.is_some(), "the plugin is set up");
    let settings = {
        use tauri::Manager;
        handle.state::<SettingsStore>().get()
    };
    SettingsApplier::new(registry, login).apply(&settings);
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// Runs the app's start in a child with `home` and `xdg_config_home`, within a deadline.
fn start_in_child(home: &Path, xdg_config_home: &Path, settings_file: &Path) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "a_user_who_had_launch_at_login_on_keeps_exactly_one_entry_the_plugins",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, settings_file)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", xdg_config_home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "the app's start failed in the child");
}

#[test]
fn a_user_who_had_launch_at_login_on_keeps_exactly_one_entry_the_plugins() {
    if let Some(settings_file) = std::env::var_os(CHILD) {
        start_the_app_in_this_process(Path::new(&settings_file));
        return;
    }
    // Two machines: XDG_CONFIG_HOME at its default (the old entry and the plugin's share a
    // path), and a custom one (the old module honoured it; the plugin writes under ~/.config).
    for custom_config in [false, true] {
        let world = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = world.path().join("home");
        let config = if custom_config {
            world.path().join("elsewhere")
        } else {
            home.join(".config")
        };
        let old = config.join("autostart/agent-tray.desktop");
        std::fs::create_dir_all(old.parent().unwrap_or(&config)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&old, OLD_ENTRY).unwrap_or_else(|e| panic!("{e}"));
        let settings_file = world.path().join("data/settings.json");
        std::fs::create_dir_all(world.path().join("data")).unwrap_or_else(|e| panic!("{e}"));
        let on = AppSettings {
            launch_at_login: true,
            ..AppSettings::default()
        };
        std::fs::write(
            &settings_file,
            serde_json::to_string(&on).unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));

        start_in_child(&home, &config, &settings_file);

        let mut all = entries(&config.join("autostart"));
        if custom_config {
            all.extend(entries(&home.join(".config/autostart")));
        }
        assert_eq!(
            all.len(),
            1,
            "exactly one login entry (custom XDG_CONFIG_HOME: {custom_config}): {all:?}"
        );
        let text = std::fs::read_to_string(&all[0]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            text.contains("Comment=agent-tray startup script"),
            "the plugin's entry, not the old one: {text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("Exec=") && l.ends_with(" --background")),
            "it starts the app in the tray: {text}"
        );
        assert_eq!(
            all[0],
            home.join(".config/autostart/agent-tray.desktop"),
            "where the plugin writes"
        );

        // Positive control of the removal: turning it off leaves no entry at all.
        let off = AppSettings::default();
        std::fs::write(
            &settings_file,
            serde_json::to_string(&off).unwrap_or_else(|e| panic!("{e}")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        start_in_child(&home, &config, &settings_file);
        // The first pass leaves an off setting alone (as before): the entry stays until the
        // user unticks it, which the settings test covers. So it is still the plugin's one.
        assert_eq!(entries(&home.join(".config/autostart")).len(), 1);
    }
}

#[test]
fn an_old_entry_turns_the_setting_back_on_when_the_settings_had_lost_it() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let world = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = world.path().join("home");
    let config = home.join(".config");
    let old = config.join("autostart/agent-tray.desktop");
    std::fs::create_dir_all(old.parent().unwrap_or(&config)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&old, OLD_ENTRY).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(world.path().join("data")).unwrap_or_else(|e| panic!("{e}"));
    // No settings file at all: the defaults say off, the old entry says on.
    let settings_file = world.path().join("data/settings.json");
    start_in_child(&home, &config, &settings_file);
    let saved: AppSettings = serde_json::from_str(
        &std::fs::read_to_string(&settings_file).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(saved.launch_at_login, "the setting follows the old entry");
    let text = std::fs::read_to_string(&old).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        text.contains("Comment=agent-tray startup script"),
        "rewritten by the plugin: {text}"
    );
}
