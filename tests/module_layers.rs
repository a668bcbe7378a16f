//! The layers, enforced: a module may import from its own layer and the layers below it, never
//! from a layer above.
//!
//! The crates already keep the coarsest layers (the domain crate `agent-tray-domain` cannot name
//! the core, the core cannot name the desktop shell: they are not its dependencies). Inside a
//! crate nothing but this test does. The allowed directions are written down once, as a table of
//! layers per source tree ([`CORE`], [`SHELL`]); the test reads every file as text, finds each
//! path through `crate::` or `super::` outside test code, and fails listing every import that
//! runs upward, by file and line, and every module the table does not place (so a new module
//! must be given a layer).
//!
//! Why this is also the cycle check: a circle of imports between modules of different layers
//! needs at least one edge that runs upward, which is a breach. Circles inside one layer are
//! allowed (the adapters still call each other); [`no_import_circle_spans_two_layers`] computes
//! the module graph's strongly connected components as a second, direct check.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A tree's layers, lowest first: each a name and the module paths it holds (`store::cli` is a
/// submodule placed apart from its parent `store`; the longest matching path wins).
type Layers = &'static [(&'static str, &'static [&'static str])];

/// The core (`src/`). `model`, `clock` and `transition` are the domain crate's, re-exported.
const CORE: Layers = &[
    (
        "domain (the agent-tray-domain crate)",
        &["model", "clock", "transition"],
    ),
    (
        "leaf utilities",
        &[
            "env_knobs",
            "paths",
            "folder_wake",
            "atomic_file",
            "os_fs",
            "process",
            "win_process",
            "control::transport",
            "terminal_text",
            "duration_text",
            "test_support",
            "test_executables",
        ],
    ),
    (
        "pure rules and records (no agent, no registry)",
        &[
            "catalogue",
            "liveness::plan",
            "usage",
            "plan_limits",
            "remote::config",
            "remote::reconcile",
            "store::alive",
        ],
    ),
    (
        "adapters and decisions",
        &[
            "agents",
            "agent_pid",
            "hook_payload",
            "delivery",
            "feeds",
            "liveness",
            "registry",
            "journal",
            "install",
            "hook_drift",
            "doctor",
            "control",
            "remote",
            "store",
            "usage",
            "tray_model",
            "shell_policy",
            "notify_policy",
            "window_rows",
            "jump",
            "answering",
            "app_install",
            "app_launch",
            "hook",
            "status",
            "status_line",
        ],
    ),
    ("engine", &["engine"]),
    (
        "command line",
        &["cli", "main", "store::cli", "remote::cli", "answering::cli"],
    ),
];

/// The desktop shell (`src-tauri/src/`).
const SHELL: Layers = &[
    (
        "types and leaves",
        &[
            "ipc",
            "alert_bus",
            "launch",
            "at_rest",
            "history",
            "menu_opening",
            "terminal_focus",
            "ui_font",
        ],
    ),
    (
        "state",
        &[
            "settings",
            "sessions",
            "autostart",
            "snapshot",
            "bindings",
            "limits",
        ],
    ),
    (
        "pages and actions",
        &["window", "popover", "actions", "events"],
    ),
    (
        "the shell's drivers",
        &[
            "commands",
            "tray",
            "notifier",
            "hook_drift",
            "menu_prewarm",
            "second_launch",
            "main",
        ],
    ),
];

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Breach {
    file: String,
    line: usize,
    from: String,
    to: String,
    why: String,
}

/// The module path of a file under `root` (`store/cli.rs` → `store::cli`, `store/mod.rs` →
/// `store`); empty for `lib.rs`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// The layer index and placed name of a module path, by the longest listed prefix.
fn place(layers: Layers, path: &[String]) -> Option<(usize, String)> {
    let mut best: Option<(usize, usize, String)> = None;
    for (index, (_, modules)) in layers.iter().enumerate() {
        for listed in *modules {
            let listed_parts: Vec<&str> = listed.split("::").collect();
            let matches = listed_parts.len() <= path.len()
                && listed_parts.iter().zip(path).all(|(a, b)| *a == b.as_str());
            if matches
                && best
                    .as_ref()
                    .is_none_or(|(len, _, _)| listed_parts.len() > *len)
            {
                best = Some((listed_parts.len(), index, listed.to_string()));
            }
        }
    }
    best.map(|(_, index, name)| (index, name))
}

/// The text with comments blanked and every `#[cfg(test)]` item cut out, line numbers kept.
fn code_only(text: &str) -> String {
    let mut out: Vec<char> = Vec::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    let text: String = out.into_iter().collect();
    cut_test_items(&text)
}

/// Blanks (keeping newlines) each item marked `#[cfg(test)]`: its attributes, then up to its
/// `;` or its matching closing brace.
fn cut_test_items(text: &str) -> String {
    let mut bytes: Vec<u8> = text.as_bytes().to_vec();
    let mut from = 0;
    while let Some(found) = text[from..].find("#[cfg(test)]") {
        let start = from + found;
        let mut i = start;
        let mut depth = 0usize;
        let mut seen_brace = false;
        while i < bytes.len() {
            match bytes[i] {
                b'{' => {
                    depth += 1;
                    seen_brace = true;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if seen_brace && depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if !seen_brace => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        for b in &mut bytes[start..i.min(text.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = i.min(text.len());
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Every module path a file refers to through `crate::` or `super::`, with its line.
fn references(module: &[String], code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(pos) = rest.find("crate::").or_else(|| rest.find("super::")) {
            let (prefix, after) = if rest[pos..].starts_with("crate::") {
                (Vec::new(), &rest[pos + "crate::".len()..])
            } else {
                // `super` in the file of module `a::b` (`a/b.rs` or `a/b/mod.rs`) is `a`.
                let mut parent = module.to_vec();
                parent.pop();
                (parent, &rest[pos + "super::".len()..])
            };
            // A group `crate::{a::b, c}` names several paths; a plain path names one.
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let mut path = prefix.clone();
                    path.extend(path_words(item.trim()));
                    if !path.is_empty() {
                        found.push((number + 1, path));
                    }
                }
            } else {
                let mut path = prefix.clone();
                path.extend(path_words(after));
                if !path.is_empty() {
                    found.push((number + 1, path));
                }
            }
            rest = &rest[pos + 6..];
        }
    }
    found
}

fn path_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for segment in text.split("::") {
        let word: String = segment
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if word.is_empty() || word.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            if !word.is_empty() {
                words.push(word);
            }
            break;
        }
        words.push(word);
        if !segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            break;
        }
    }
    words
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What the checker found in one tree: upward imports, unplaced modules, and the module graph.
struct Report {
    breaches: Vec<Breach>,
    unplaced: BTreeSet<String>,
    graph: BTreeMap<String, BTreeSet<String>>,
}

fn check(root: &Path, layers: Layers) -> Report {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut report = Report {
        breaches: Vec::new(),
        unplaced: BTreeSet::new(),
        graph: BTreeMap::new(),
    };
    for file in files {
        let module = module_of(root, &file);
        if module.is_empty() {
            continue; // lib.rs: declares the modules, imports nothing of them
        }
        let Some((from_layer, from_name)) = place(layers, &module) else {
            report.unplaced.insert(module.join("::"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, path) in references(&module, &code_only(&text)) {
            let Some((to_layer, to_name)) = place(layers, &path) else {
                continue; // an item of lib.rs, or a path that names no module
            };
            if to_name != from_name {
                report
                    .graph
                    .entry(from_name.clone())
                    .or_default()
                    .insert(to_name.clone());
            }
            if to_layer > from_layer {
                report.breaches.push(Breach {
                    file: file.display().to_string(),
                    line,
                    from: from_name.clone(),
                    to: path.join("::"),
                    why: format!(
                        "layer '{}' may not import from '{}' above it",
                        layers[from_layer].0, layers[to_layer].0
                    ),
                });
            }
        }
    }
    report.breaches.sort();
    report
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: Vec<&str> = graph.keys().map(String::as_str).collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn trees() -> [(PathBuf, Layers); 2] {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        (here.join("src"), CORE),
        (here.join("src-tauri/src"), SHELL),
    ]
}

fn listing(breaches: &[Breach]) -> String {
    breaches
        .iter()
        .map(|b| {
            format!(
                "{}:{}: {} imports {}: {}",
                b.file, b.line, b.from, b.to, b.why
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// The next change that makes, say, the registry import the CLI (or the window module import the
// tray) fails here, by file and line, instead of tying the layers together unnoticed.
#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    for (root, layers) in trees() {
        let report = check(&root, layers);
        assert!(
            report.breaches.is_empty(),
            "imports that run up the layers in {}:\n{}",
            root.display(),
            listing(&report.breaches)
        );
    }
}

// A module nobody placed would be checked against nothing: every module gets a layer.
#[test]
fn every_module_has_a_layer() {
    for (root, layers) in trees() {
        let report = check(&root, layers);
        assert!(
            report.unplaced.is_empty(),
            "modules of {} with no layer in tests/module_layers.rs: {:?}",
            root.display(),
            report.unplaced
        );
    }
}

// Circles inside one layer are allowed; a circle through two layers is the tangle this test
// exists to prevent.
#[test]
fn no_import_circle_spans_two_layers() {
    for (root, layers) in trees() {
        let report = check(&root, layers);
        for circle in circles(&report.graph) {
            let spanned: BTreeSet<usize> = circle
                .iter()
                .filter_map(|m| {
                    let path: Vec<String> = m.split("::").map(str::to_string).collect();
                    place(layers, &path).map(|(layer, _)| layer)
                })
                .collect();
            assert!(
                spanned.len() <= 1,
                "an import circle in {} spans layers {:?}: {:?}",
                root.display(),
                spanned.iter().map(|l| layers[*l].0).collect::<Vec<_>>(),
                circle
            );
        }
    }
}

/// The circles still allowed inside one layer, by tree: the adapters reach the kits they share
/// (install's plan, doctor's findings, the feeds' tailer, the hook payload) in modules that also
/// loop over every registered agent. The list may only shrink: a module that joins a circle (as
/// the pid watcher and hook drift did before their shared parts moved to `liveness::plan`,
/// `folder_wake` and `install::record`) fails here and must be cut out instead.
const CIRCLES_ALLOWED: &[(&str, &[&str])] = &[
    (
        "src",
        &[
            "agent_pid",
            "agents",
            "answering",
            "control",
            "delivery",
            "doctor",
            "feeds",
            "hook_payload",
            "install",
            "journal",
            "registry",
            "remote",
            "tray_model",
            "cli",
            "store::cli",
        ],
    ),
    ("src-tauri/src", &[]),
];

#[test]
fn the_circles_inside_a_layer_only_shrink() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (root, layers) in trees() {
        let tree = root
            .strip_prefix(here)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let allowed: BTreeSet<&str> = CIRCLES_ALLOWED
            .iter()
            .find(|(name, _)| *name == tree)
            .map(|(_, modules)| modules.iter().copied().collect())
            .unwrap_or_default();
        let report = check(&root, layers);
        let joined: Vec<String> = circles(&report.graph)
            .into_iter()
            .flatten()
            .filter(|m| !allowed.contains(m.as_str()))
            .collect();
        assert!(
            joined.is_empty(),
            "modules of {tree} newly in an import circle: {joined:?}"
        );
    }
}

// The checker itself: on a small tree with one planted upward import (a leaf reaching for the
// engine, through a group, in a nested module), it reports exactly that import, and finds the
// circle it closes; test code and comments naming the engine are not imports.
#[test]
fn the_checker_reports_a_planted_breach_by_file_and_line() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path();
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod paths;\npub mod engine;\npub mod store;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("paths.rs"),
        "// crate::engine in a comment is no import\nuse std::fmt;\nuse crate::{env_knobs, engine::Engine};\n\n#[cfg(test)]\nmod tests {\n    use crate::engine::Other;\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("engine.rs"),
        "use crate::paths::TrayPaths;\nuse crate::store::cli;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/mod.rs"),
        "pub mod cli;\nuse crate::paths;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/cli.rs"),
        "use super::Store;\nuse crate::engine::Engine;\n",
    )
    .unwrap();
    const PLANTED: Layers = &[
        ("leaf utilities", &["paths", "env_knobs"]),
        ("adapters and decisions", &["store"]),
        ("engine", &["engine"]),
        ("command line", &["store::cli"]),
    ];
    let report = check(src, PLANTED);
    let found: Vec<(String, usize, String)> = report
        .breaches
        .iter()
        .map(|b| {
            let file = Path::new(&b.file)
                .strip_prefix(src)
                .unwrap()
                .display()
                .to_string();
            (file, b.line, b.to.clone())
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("engine.rs".to_string(), 2, "store::cli".to_string()),
            ("paths.rs".to_string(), 3, "engine::Engine".to_string()),
        ],
        "the leaf's import of the engine and the engine's import of the command line, and nothing else: {}",
        listing(&report.breaches)
    );
    assert!(report.unplaced.is_empty(), "{:?}", report.unplaced);
    let circles = circles(&report.graph);
    assert!(
        circles
            .iter()
            .any(|c| c.contains(&"paths".to_string()) && c.contains(&"engine".to_string())),
        "the planted import closes a circle paths -> engine -> paths: {circles:?}"
    );
}
