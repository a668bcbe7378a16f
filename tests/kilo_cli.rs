//! Kilo Code CLI through the real binary: `install`/`uninstall --kilo` write and remove our own
//! plugin in Kilo's folder (`~/.config/kilo/plugins`; `--dry-run` writes nothing, a second
//! install changes nothing, the user's other plugins and OpenCode's folder are never touched, a
//! file at our path we did not write is refused), `doctor` probes the command line the plugin
//! runs, and that line delivers a payload of the recorded shape to a running daemon as a Kilo
//! session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{bin, run_hook_via, wait_until, World};

fn kilo_dir(w: &World) -> PathBuf {
    w.path().join("home/.config/kilo/plugins")
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn loadable(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".js") || n.ends_with(".ts"))
        .collect();
    names.sort();
    names
}

const THEIRS: &str = "// the user's own plugin\nexport const Theirs = async () => ({})\n";

#[test]
fn install_kilo_writes_our_own_plugin_once_and_uninstall_removes_exactly_it() {
    let w = World::new();
    let dir = kilo_dir(&w);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("theirs.js"), THEIRS).unwrap();
    let ours = dir.join("agent-tray.js");

    let dry = w.run(&["install", "--kilo", "--dry-run", "--allow-insecure-path"]);
    assert!(dry.status.success(), "{}", out(&dry));
    assert!(
        out(&dry).contains("hook"),
        "the dry run shows the plugin: {}",
        out(&dry)
    );
    assert!(!ours.exists(), "--dry-run wrote the plugin");

    let first = w.run(&["install", "--kilo", "--allow-insecure-path"]);
    assert!(first.status.success(), "{}", out(&first));
    let text = std::fs::read_to_string(&ours).unwrap();
    assert!(text.starts_with("// agent-tray plugin for Kilo Code CLI:"));
    assert!(text.contains(r#"["hook", "--agent", "kilo"]"#), "{text}");
    assert!(
        !w.path().join("home/.config/opencode").exists(),
        "install --kilo touched OpenCode's folder"
    );
    let again = w.run(&["install", "--kilo", "--allow-insecure-path"]);
    assert!(
        out(&again).contains("already done"),
        "a second install changed something: {}",
        out(&again)
    );
    assert_eq!(std::fs::read_to_string(&ours).unwrap(), text);

    let gone = w.run(&["uninstall", "--kilo"]);
    assert!(gone.status.success(), "{}", out(&gone));
    assert!(!ours.exists(), "uninstall left our plugin");
    assert_eq!(
        loadable(&dir),
        ["theirs.js"],
        "only the user's plugin stays loadable"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("theirs.js")).unwrap(),
        THEIRS
    );
}

#[test]
fn a_plugin_at_our_path_that_we_did_not_write_is_refused_untouched() {
    // OpenCode's plugin is not Kilo's either: a copy of it at Kilo's path is refused too.
    let w = World::new();
    let p = kilo_dir(&w).join("agent-tray.js");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let o = w.run(&["install", "--opencode", "--allow-insecure-path"]);
    assert!(o.status.success(), "{}", out(&o));
    let opencodes =
        std::fs::read_to_string(w.path().join("home/.config/opencode/plugins/agent-tray.js"))
            .unwrap();
    for foreign in ["export const Mine = async () => ({})\n", opencodes.as_str()] {
        std::fs::write(&p, foreign).unwrap();
        for args in [
            &["install", "--kilo", "--allow-insecure-path"][..],
            &["uninstall", "--kilo"][..],
        ] {
            let o = w.run(args);
            assert!(!o.status.success(), "{args:?} accepted a foreign plugin");
            assert!(out(&o).contains("not written by agent-tray"), "{}", out(&o));
            assert_eq!(std::fs::read_to_string(&p).unwrap(), foreign);
        }
    }
    // Positive control: once it is gone, install writes ours.
    std::fs::remove_file(&p).unwrap();
    let o = w.run(&["install", "--kilo", "--allow-insecure-path"]);
    assert!(o.status.success(), "{}", out(&o));
    assert!(std::fs::read_to_string(&p)
        .unwrap()
        .starts_with("// agent-tray plugin for Kilo Code CLI"));
}

#[test]
fn doctor_probes_kilos_plugin_command_line_and_its_answer_path() {
    let w = World::new();
    let path = common::path_with_fake_agents(&w, &["kilo"]);
    common::install_with_path(&w, &bin(), &path, &["--kilo"]);
    let daemon = w.start_daemon();
    let (ok, text) = common::doctor_with_path(&w, &path);
    assert!(ok, "doctor failed:\n{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("✓ Kilo Code CLI is hooked through")
                && l.contains("(ours, current)")),
        "{text}"
    );
    assert!(text.contains("hook --agent kilo`"), "{text}");
    assert!(
        text.contains("✓ Kilo Code CLI's hook delivered a probe to Agent Tray"),
        "{text}"
    );
    assert!(
        text.contains("✓ Kilo Code CLI's answer path works"),
        "{text}"
    );
    // Without the plugin, doctor fails and says what to run.
    std::fs::remove_file(kilo_dir(&w).join("agent-tray.js")).unwrap();
    let (ok, text) = common::doctor_with_path(&w, &path);
    assert!(!ok, "doctor passed with no plugin:\n{text}");
    let l = text
        .lines()
        .find(|l| l.starts_with("✗ Kilo Code CLI is not hooked:"))
        .unwrap_or_else(|| panic!("no failure line:\n{text}"));
    assert!(l.contains("run `agent-tray install --kilo`"), "{l}");
    drop(daemon);
}

#[test]
fn the_kilo_plugins_command_line_delivers_a_recorded_permission_ask() {
    let w = World::new();
    let _daemon = w.start_daemon();
    // Answering off: the hook delivers and returns (on, it would wait for an answer).
    let off = w.run(&["answering", "kilo", "off"]);
    assert!(off.status.success(), "{}", out(&off));
    // The recorded `permission.asked` of Kilo 7.7.7, as the plugin forwards it.
    let ask = r#"{"v":1,"pid":999999,"directory":"/home/dev/proj","ts":1796539018134,"type":"permission.asked","properties":{"id":"per_24a11eb95001nP57OGOFj7xaHK","sessionID":"ses_db5ee2aeaffeSL1EBtgPND2BtV","permission":"bash","patterns":["touch made-by-tool"],"metadata":{"command":"touch made-by-tool"},"always":["touch *"]}}"#;
    run_hook_via(
        &w,
        std::path::Path::new("/bin/sh"),
        &format!("{} hook --agent kilo", bin().display()),
        ask,
        &[],
    );
    let s = wait_until(Duration::from_secs(5), || {
        w.session("ses_db5ee2aeaffeSL1EBtgPND2BtV")
    })
    .expect("the Kilo session is listed");
    assert_eq!(s["agent"], "kilo");
    assert_eq!(s["state"], "waiting_for_permission");
    assert_eq!(s["cwd"], "/home/dev/proj");
}
