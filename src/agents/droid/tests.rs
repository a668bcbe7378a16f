use super::*;
use std::time::Duration;

use chrono::DateTime;

use crate::agents::observation_from_payload;
use crate::model::SessionState;
use crate::test_support::ScriptedTable as Tree;
use crate::transition::{apply, create, Now, SessionRecord};

const BIN: &str = "/opt/agent-tray/bin/agent-tray";

fn now(secs: i64) -> Now {
    Now {
        wall: DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap(),
        mono: Duration::from_secs(u64::try_from(secs).unwrap()),
    }
}

fn recorded() -> Vec<Value> {
    crate::test_support::recorded_json_lines("droid/real-0.215.0/hooks.jsonl")
}

/// The states one recorded session goes through, fed to the parser as the hook would be.
fn states_of(session: &str, hint: Option<Agent>) -> Vec<SessionState> {
    let mut record: Option<SessionRecord> = None;
    let mut states = Vec::new();
    for (i, line) in recorded().iter().enumerate() {
        if line["payload"]["session_id"] != session {
            continue;
        }
        let secs = i64::try_from(i).unwrap() + 1;
        let payload = serde_json::to_vec(&line["payload"]).unwrap();
        let obs = observation_from_payload(&payload, hint, None, now(secs).wall)
            .unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        assert_eq!(obs.agent, Agent::Droid, "line {}", i + 1);
        match record.as_mut() {
            None => record = Some(create(&obs, now(secs)).unwrap()),
            Some(r) => {
                apply(r, &obs, now(secs)).unwrap();
            }
        }
        states.push(record.as_ref().unwrap().session.state);
    }
    states
}

/// The recorded `droid exec` run that ran a shell command (0.215.0: SessionStart, PreToolUse,
/// PostToolUse, Stop, SessionEnd): installed as `--agent droid`, each event moves the session
/// as people expect, and the transcript under `~/.factory/sessions/` says it is Droid's when a
/// hand-written hook line gives no `--agent`.
#[test]
fn a_recorded_droid_session_with_a_tool_run_goes_from_starting_to_ended() {
    use SessionState::*;
    let tool_run = "24c5af4e-1056-4d80-8eac-514b746ac118";
    let want = [Starting, Working, Working, Idle, Ended];
    assert_eq!(states_of(tool_run, Some(Agent::Droid)), want);
    assert_eq!(
        states_of(tool_run, None),
        want,
        "told by its transcript path"
    );
    // A turn with no tool: straight to idle, then ended.
    assert_eq!(
        states_of("6aa4fa29-b2ee-47a2-9d13-3424a5cc868a", Some(Agent::Droid)),
        [Starting, Idle, Ended]
    );
}

/// The agent process the interactive UI runs (`droid exec --input-format stream-jsonrpc`,
/// driven here by a script in the UI's place, recorded with 0.215.0): the prompt makes the
/// session work (UserPromptSubmit), and the permission dialog for a command makes it wait for
/// permission (Notification `permission_prompt`, after PreToolUse).
#[test]
fn the_ui_s_agent_process_works_on_a_prompt_and_waits_for_permission_at_its_dialog() {
    use SessionState::*;
    let lines =
        crate::test_support::recorded_json_lines("droid/real-0.215.0/hooks-stream-jsonrpc.jsonl");
    let mut record: Option<SessionRecord> = None;
    let mut states = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let secs = i64::try_from(i).unwrap() + 1;
        let payload = serde_json::to_vec(&line["payload"]).unwrap();
        let obs =
            observation_from_payload(&payload, Some(Agent::Droid), None, now(secs).wall).unwrap();
        match record.as_mut() {
            None => record = Some(create(&obs, now(secs)).unwrap()),
            Some(r) => {
                apply(r, &obs, now(secs)).unwrap();
            }
        }
        states.push(record.as_ref().unwrap().session.state);
    }
    assert_eq!(states, [Starting, Working, Working, WaitingForPermission]);
    assert_eq!(
        lines[0]["parent_chain"][1]["argv"][2], "--input-format",
        "recorded under the UI's agent process"
    );
}

/// Droid's Notification types are Claude's: the permission dialog is a wait for permission, a
/// question a wait for input (payload shaped as the 0.215.0 bundle sends it).
#[test]
fn droid_s_permission_notification_makes_the_session_wait_for_permission() {
    let start = recorded()
        .into_iter()
        .find(|l| l["event"] == "SessionStart")
        .unwrap()["payload"]
        .clone();
    let mut record = create(
        &observation_from_payload(
            &serde_json::to_vec(&start).unwrap(),
            Some(Agent::Droid),
            None,
            now(1).wall,
        )
        .unwrap(),
        now(1),
    )
    .unwrap();
    let mut note = start.clone();
    let o = note.as_object_mut().unwrap();
    o.insert("hook_event_name".into(), json!("Notification"));
    o.insert(
        "message".into(),
        json!("Factory CLI needs permission to execute 1 tool(s)"),
    );
    o.insert("notification_type".into(), json!("permission_prompt"));
    o.remove("source");
    let obs = observation_from_payload(
        &serde_json::to_vec(&note).unwrap(),
        Some(Agent::Droid),
        None,
        now(2).wall,
    )
    .unwrap();
    apply(&mut record, &obs, now(2)).unwrap();
    assert_eq!(record.session.state, SessionState::WaitingForPermission);
}

/// The recorded hooks ran under `sh` under `droid exec`: the walk stops at that droid. Under
/// the interactive UI the agent runs in a `droid exec --input-format stream-jsonrpc` child: the
/// UI, the process the user kills, owns the session. `droid daemon` is no session.
#[test]
fn the_outermost_droid_above_the_hook_owns_the_session() {
    let line = recorded()
        .into_iter()
        .find(|l| l["event"] == "PreToolUse")
        .unwrap();
    let chain = line["parent_chain"].as_array().unwrap();
    // Rebuild the recorded chain (sh, droid exec, …), each the parent of the one before.
    let mut tree = Tree::default();
    for (i, p) in chain.iter().enumerate() {
        let pid = u32::try_from(p["pid"].as_u64().unwrap()).unwrap();
        let ppid = chain
            .get(i + 1)
            .map_or(1, |n| u32::try_from(n["pid"].as_u64().unwrap()).unwrap());
        let argv = p["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        tree = tree.with_argv(pid, ppid, p["comm"].as_str().unwrap(), argv);
    }
    let sh = u32::try_from(chain[0]["pid"].as_u64().unwrap()).unwrap();
    let exec = u32::try_from(chain[1]["pid"].as_u64().unwrap()).unwrap();
    assert_eq!(chain[1]["comm"], "droid");
    assert_eq!(
        crate::agent_pid::find_agent_pid(&tree, sh, Some(Agent::Droid), &crate::agents::Adapters),
        Some((exec, Agent::Droid))
    );

    let ui = Tree::default()
        .with(500, 400, "bash", &["bash"])
        .with(600, 500, "droid", &["droid"])
        .with(
            700,
            600,
            "droid",
            &[
                "droid",
                "exec",
                "--input-format",
                "stream-jsonrpc",
                "--output-format",
                "stream-jsonrpc",
            ],
        )
        .with(
            800,
            700,
            "sh",
            &["sh", "-c", "agent-tray hook --agent droid"],
        );
    assert_eq!(
        crate::agent_pid::find_agent_pid(&ui, 800, Some(Agent::Droid), &crate::agents::Adapters),
        Some((600, Agent::Droid))
    );
    let daemon = Tree::default()
        .with(600, 1, "droid", &["droid", "daemon"])
        .with(
            800,
            600,
            "sh",
            &["sh", "-c", "agent-tray hook --agent droid"],
        );
    assert_eq!(
        crate::agent_pid::find_agent_pid(
            &daemon,
            800,
            Some(Agent::Droid),
            &crate::agents::Adapters
        ),
        None
    );
}

fn paths() -> (PathBuf, PathBuf) {
    (
        PathBuf::from("/home/me/.factory/hooks.json"),
        PathBuf::from("/home/me/.factory/settings.json"),
    )
}

fn new_text(plan: &Plan, path: &Path) -> Option<String> {
    plan.changes
        .iter()
        .find(|c| c.path == path)
        .and_then(|c| c.new.clone())
}

/// A hooks.json as Droid's `/hooks` screen writes it (JSON.stringify, two spaces, no final
/// newline), with the user's own hook and switch, and a comment Droid tolerates: install adds
/// ours at the top level beside them, uninstall gives every byte back, and settings.json (with
/// no hooks) is never touched.
#[test]
fn install_merges_into_droid_s_hooks_json_and_uninstall_gives_the_bytes_back() {
    let (hooks, settings) = paths();
    let bin = Path::new(BIN);
    let old = "{\n  // mine\n  \"Stop\": [\n    {\n      \"hooks\": [\n        {\n          \"type\": \"command\",\n          \"command\": \"notify-send done\",\n          \"timeout\": 1e1\n        }\n      ]\n    }\n  ],\n  \"showHookOutput\": false\n}";
    let settings_old = "{\n  \"model\": \"custom:Mock-0\"\n}";
    let plan = plan_texts(
        &hooks,
        Some(old),
        &settings,
        Some(settings_old),
        bin,
        Action::Install,
    )
    .unwrap();
    let new = new_text(&plan, &hooks).unwrap();
    assert_eq!(new_text(&plan, &settings), None, "settings.json untouched");
    let doc = parse_json_with_comments(&new).unwrap();
    assert!(doc.get("hooks").is_none(), "events at the top level: {new}");
    for (event, tools) in EVENTS {
        let groups = doc[event].as_array().unwrap();
        let ours = groups.last().unwrap();
        assert_eq!(
            ours["hooks"][0]["command"],
            format!("{BIN} hook --agent droid"),
            "{event}"
        );
        assert_eq!(ours.get("matcher").is_some(), *tools, "{event}");
        assert!(ours["hooks"][0].get("timeout").is_none());
    }
    assert!(new.contains("\"timeout\": 1e1") && new.contains("// mine"));
    assert!(schema_problem(doc.as_object().unwrap()).is_none());
    let again = plan_texts(
        &hooks,
        Some(&new),
        &settings,
        Some(settings_old),
        bin,
        Action::Install,
    )
    .unwrap();
    assert!(
        again.changes.iter().all(|c| c.new.is_none()),
        "twice is once"
    );
    let back = plan_texts(
        &hooks,
        Some(&new),
        &settings,
        Some(settings_old),
        bin,
        Action::Uninstall,
    )
    .unwrap();
    assert_eq!(new_text(&back, &hooks).as_deref(), Some(old));
    assert_eq!(new_text(&back, &settings), None);
}

/// With no files at all, install creates hooks.json only (no settings.json), and Droid's own
/// schema takes it.
#[test]
fn a_fresh_home_gets_a_hooks_json_and_no_settings_json() {
    let (hooks, settings) = paths();
    let plan = plan_texts(
        &hooks,
        None,
        &settings,
        None,
        Path::new(BIN),
        Action::Install,
    )
    .unwrap();
    assert_eq!(plan.changes.len(), 1, "{plan:?}");
    let doc = parse_json_with_comments(&new_text(&plan, &hooks).unwrap()).unwrap();
    assert_eq!(doc.as_object().unwrap().len(), EVENTS.len());
    assert!(schema_problem(doc.as_object().unwrap()).is_none());
}

/// A user whose `Stop` hook still lives in settings.json (and whose hooks.json has none): a
/// `Stop` of ours in hooks.json would hide theirs (Droid merges per event, the hooks file
/// winning), so ours goes beside theirs in settings.json; the rest into hooks.json. Both files
/// come back byte for byte on uninstall, and Droid then runs both Stop hooks.
#[test]
fn an_event_only_settings_json_lists_gets_ours_beside_the_user_s_there() {
    let (hooks, settings) = paths();
    let bin = Path::new(BIN);
    let hooks_old = "{\n  \"PreToolUse\": [\n    {\n      \"matcher\": \"Execute\",\n      \"hooks\": [\n        {\n          \"type\": \"command\",\n          \"command\": \"guard\"\n        }\n      ]\n    }\n  ]\n}";
    let settings_old = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"mine\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    let plan = plan_texts(
        &hooks,
        Some(hooks_old),
        &settings,
        Some(settings_old),
        bin,
        Action::Install,
    )
    .unwrap();
    let h = new_text(&plan, &hooks).unwrap();
    let s = new_text(&plan, &settings).unwrap();
    let hd = parse_json_with_comments(&h).unwrap();
    let sd = parse_json_with_comments(&s).unwrap();
    assert!(hd.get("Stop").is_none(), "{h}");
    let effective = effective_hooks(&hd, &sd);
    let stop: Vec<&str> = effective["Stop"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["hooks"][0]["command"].as_str().unwrap())
        .collect();
    assert_eq!(stop, ["mine", &format!("{BIN} hook --agent droid")]);
    assert!(plan.notes.iter().any(|n| n.contains("Stop")), "{plan:?}");
    let (findings, command) = doctor_findings(
        "Factory Droid",
        (&hooks, &hd),
        (&settings, &sd),
        bin,
        Agent::Droid,
    );
    assert!(
        findings.iter().all(|f| !matches!(f, Finding::Problem(_))),
        "{findings:?}"
    );
    assert_eq!(
        command.as_deref(),
        Some(&*format!("{BIN} hook --agent droid"))
    );
    let back = plan_texts(
        &hooks,
        Some(&h),
        &settings,
        Some(&s),
        bin,
        Action::Uninstall,
    )
    .unwrap();
    assert_eq!(new_text(&back, &hooks).as_deref(), Some(hooks_old));
    assert_eq!(new_text(&back, &settings).as_deref(), Some(settings_old));
}

/// While only the older `hooks/hooks.json` exists, Droid reads it: ours go there (a new
/// `hooks.json` would make Droid stop reading the user's file).
#[test]
fn the_older_hooks_file_is_written_while_it_is_the_one_droid_reads() {
    let dir = Path::new("/home/me/.factory");
    let legacy = dir.join("hooks/hooks.json");
    let only_legacy = |p: &Path| p == legacy;
    assert_eq!(active_hooks_file(dir, &only_legacy), legacy);
    let both = |_: &Path| true;
    assert_eq!(active_hooks_file(dir, &both), dir.join("hooks.json"));
    let none = |_: &Path| false;
    assert_eq!(active_hooks_file(dir, &none), dir.join("hooks.json"));
}

/// `doctor` reads the hooks as Droid merges them: ours hidden by a hooks.json list of the same
/// event are missing; `hooksDisabled` and an entry Droid's schema refuses (it then drops the
/// whole file) are problems.
#[test]
fn doctor_sees_hidden_disabled_and_refused_hooks() {
    let (hooks, settings) = paths();
    let bin = Path::new(BIN);
    let installed = plan_texts(&hooks, None, &settings, None, bin, Action::Install).unwrap();
    let good = parse_json_with_comments(&new_text(&installed, &hooks).unwrap()).unwrap();
    let none = json!({});
    let (ok, command) = doctor_findings(
        "Factory Droid",
        (&hooks, &good),
        (&settings, &none),
        bin,
        Agent::Droid,
    );
    assert!(matches!(ok.as_slice(), [Finding::Ok(_)]), "{ok:?}");
    assert!(command.is_some());

    let mut disabled = good.clone();
    disabled["hooksDisabled"] = json!(true);
    let (f, _) = doctor_findings(
        "Factory Droid",
        (&hooks, &disabled),
        (&settings, &none),
        bin,
        Agent::Droid,
    );
    assert!(
        f.iter()
            .any(|f| matches!(f, Finding::Problem(p) if p.contains("hooksDisabled"))),
        "{f:?}"
    );

    let mut refused = good.clone();
    refused["Stop"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "prompt", "prompt": "x"}]}));
    let (f, _) = doctor_findings(
        "Factory Droid",
        (&hooks, &refused),
        (&settings, &none),
        bin,
        Agent::Droid,
    );
    assert!(
        f.iter()
            .any(|f| matches!(f, Finding::Problem(p) if p.contains("ignores every hook"))),
        "{f:?}"
    );

    // Ours only in settings.json, and hooks.json lists Stop with another tool's hook only.
    let settings_only = json!({"hooks": good.clone()});
    let hiding = json!({"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]});
    let (f, _) = doctor_findings(
        "Factory Droid",
        (&hooks, &hiding),
        (&settings, &settings_only),
        bin,
        Agent::Droid,
    );
    assert!(
        f.iter()
            .any(|f| matches!(f, Finding::Problem(p) if p.contains("missing for Stop"))),
        "{f:?}"
    );
}

#[test]
fn a_droid_session_resumes_with_droid_resume() {
    assert_eq!(
        crate::tray_model::resume_command(Agent::Droid, "d-1"),
        "droid --resume d-1"
    );
}
