//! The layers, enforced: a module may import from its own layer and the layers below it, never
//! from a layer above, and no modules import each other round in a circle.
//!
//! The crates already keep the coarsest layers (the domain crate `agent-tray-domain` cannot name
//! the core, the core cannot name the desktop shell: they are not its dependencies). Inside a
//! crate nothing but this test does. The allowed directions are written down once, as a table of
//! layers per source tree ([`CORE`], [`SHELL`]), and `docs/architecture.md` shows that same table:
//! [`docs_architecture_shows_the_table`] renders it and fails when the doc's copy differs. The
//! test reads every file as text, finds each path through `crate::`, `self::` or any chain of
//! `super::` outside test code, and fails listing every import that runs upward, by file and
//! line, every module the table does not place (so a new module must be given a layer), and every
//! import circle.
//!
//! The crate root is a module like the others here, named [`ROOT`]: an item declared in `lib.rs`
//! (`crate::LogDir`) is imported from it. The root imports nearly every module, so it sits in the
//! top layer, and a module below that reaches for one of its items is both a breach and a circle.
//! `main.rs` is a binary's root of its own: its `crate::` is itself, not `lib.rs`.
//!
//! Why circles are checked apart from the layers: a circle across layers needs an upward edge,
//! which the layer check already reports, but a circle inside one layer breaks no layer rule and
//! ties its modules together just as much (none can be read, tested or moved without the others).
//! So [`no_import_circle_at_all`] fails on any strongly connected component of more than one module.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A tree's layers, lowest first: each a name and the module paths it holds (`store::cli` is a
/// submodule placed apart from its parent `store`; the longest matching path wins). `lib` is the
/// crate root's own items ([`ROOT`]), placed like a module, in the top layer.
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
            "bounded_lines",
            "os_fs",
            "process",
            "win_process",
            "control::transport",
            "terminal_text",
            "jump::tmux",
            "duration_text",
            "test_support",
            "test_executables",
        ],
    ),
    (
        "agent data, pure rules and records (no adapter, no registry)",
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
        "kits the adapters are built from, and the decisions over sessions (none names an adapter)",
        &[
            "hook_payload",
            "agent_pid",
            "delivery",
            "feeds",
            "registry",
            "journal",
            "install",
            "doctor::findings",
            "control",
            "answering",
            "talk_back",
            "liveness",
            "store",
            "remote",
            "tray_model",
            "notify_policy",
            "window_rows",
            "shell_policy",
            "jump",
            "app_launch",
        ],
    ),
    ("adapters", &["agents"]),
    (
        "services over the agents",
        &[
            "doctor",
            "install_command",
            "app_install",
            "hook",
            "hook_drift",
            "status",
            "status_line",
        ],
    ),
    ("engine", &["engine"]),
    ("command line", &["cli", "main", "lib"]),
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
            "logs",
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
            "window_host",
            "main",
            "lib",
        ],
    ),
];

/// The name the tables give a crate's root file, `lib.rs`: what a path through `crate::` names
/// when its first word is no module (an item declared in the root, as `crate::LogDir` was).
const ROOT: &str = "lib";

/// The trees checked: each its folder under the workspace, what it is (for the doc), its table.
const TREES: &[(&str, &str, Layers)] = &[
    ("src", "the core, the package `agent-tray`", CORE),
    (
        "src-tauri/src",
        "the desktop shell, the package `agent-tray-desktop`",
        SHELL,
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
/// `store`); empty for the crate root `lib.rs`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        let crate_root = parts.is_empty() && stem == ROOT;
        if stem != "mod" && !crate_root {
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

/// The text with comments, string literals and character literals blanked and every
/// `#[cfg(test)]` item cut out, line numbers kept: a `crate::` in a message is no import, and a
/// brace in a string would throw off the count of braces that tells which inline module a line
/// is in.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let blank = |c: &char| if *c == '\n' { '\n' } else { ' ' };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let at = |k: usize| chars.get(k).copied();
        let after_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        // The end (exclusive) of a comment or literal starting at `i`, if one does.
        let end = if at(i) == Some('/') && at(i + 1) == Some('/') {
            let mut j = i;
            while j < chars.len() && chars[j] != '\n' {
                j += 1;
            }
            Some(j)
        } else if at(i) == Some('/') && at(i + 1) == Some('*') {
            // Block comments nest.
            let (mut j, mut depth) = (i, 0usize);
            while j < chars.len() {
                if at(j) == Some('/') && at(j + 1) == Some('*') {
                    depth += 1;
                    j += 2;
                } else if at(j) == Some('*') && at(j + 1) == Some('/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            Some(j)
        } else if !after_word
            && (at(i) == Some('r') || (at(i) == Some('b') && at(i + 1) == Some('r')))
        {
            // A raw string, `r"…"`, `r#"…"#`, `br#"…"#`, or a word starting with r or br.
            let mut j = i + if at(i) == Some('b') { 2 } else { 1 };
            let mut hashes = 0;
            while at(j) == Some('#') {
                hashes += 1;
                j += 1;
            }
            (at(j) == Some('"')).then(|| {
                j += 1;
                while j < chars.len()
                    && !(chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == Some('#')))
                {
                    j += 1;
                }
                (j + 1 + hashes).min(chars.len())
            })
        } else if at(i) == Some('"') {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            Some((j + 1).min(chars.len()))
        } else if at(i) == Some('\'') && at(i + 1) == Some('\\') {
            // An escaped character literal (`'\n'`, `'\u{7b}'`).
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            Some((j + 1).min(chars.len()))
        } else if at(i) == Some('\'') && at(i + 2) == Some('\'') {
            Some(i + 3) // `'{'`; a lifetime (`'a`) has no closing quote
        } else {
            None
        };
        match end {
            Some(end) => {
                out.extend(chars[i..end].iter().map(blank));
                i = end;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    cut_test_items(&out)
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

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Reads code as bytes, counting lines, for [`references`].
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
}

impl Cursor<'_> {
    fn skip_space(&mut self) {
        while let Some(b) = self.bytes.get(self.at).filter(|b| b.is_ascii_whitespace()) {
            if *b == b'\n' {
                self.line += 1;
            }
            self.at += 1;
        }
    }

    fn word(&mut self) -> Option<String> {
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(|b| is_word_byte(*b)) {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned())
    }

    /// Takes `text` (after any whitespace) if it comes next.
    fn take(&mut self, text: &str) -> bool {
        let (at, line) = (self.at, self.line);
        self.skip_space();
        if self.bytes[self.at..].starts_with(text.as_bytes()) {
            self.at += text.len();
            true
        } else {
            (self.at, self.line) = (at, line);
            false
        }
    }

    /// Reads a path or a use tree after `base::` (`a::b`, `a::{b, c::d}`, `{self, a}`), pushing
    /// each path it names with the line it starts on. The words after a capitalised one (a type
    /// or a constant) are its members, not modules: the path stops there.
    fn tree(&mut self, base: &[String], out: &mut Vec<(usize, Vec<String>)>) {
        self.skip_space();
        if self.take("{") {
            loop {
                if self.take("}") {
                    return;
                }
                self.tree(base, out);
                if !self.take(",") {
                    self.take("}");
                    return;
                }
            }
        }
        let line = self.line;
        let mut path = base.to_vec();
        let mut capitalised = false;
        while let Some(word) = self.word() {
            if word != "self" && !capitalised {
                capitalised = word.starts_with(|c: char| c.is_ascii_uppercase());
                path.push(word);
            }
            if !self.take("::") {
                break;
            }
            self.skip_space();
            if self.bytes.get(self.at) == Some(&b'{') {
                self.tree(&path, out);
                return;
            }
        }
        // A renaming (`a::b as c`) is read past, so a group goes on to its next path.
        let (at, line_now) = (self.at, self.line);
        self.skip_space();
        if self.word().as_deref() == Some("as") {
            self.skip_space();
            self.word();
        } else {
            (self.at, self.line) = (at, line_now);
        }
        if !path.is_empty() {
            out.push((line, path));
        }
    }
}

/// Every path a file names through `crate::`, `self::` or `super::` (a chain of `super::`
/// resolved), with its line, from the crate root: `module` is the file's, `crate_root` what
/// `crate::` is in it (empty, `lib.rs`, but for a binary's `main.rs`). `super` is counted from
/// the module a line is in, an inline `mod name { … }` included: in `a/b.rs` or `a/b/mod.rs`
/// (module `a::b`) `super` is `a`, inside its `mod c { … }` it is `a::b`.
fn references(module: &[String], crate_root: &[String], code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let mut cursor = Cursor {
        bytes: code.as_bytes(),
        at: 0,
        line: 1,
    };
    let mut depth = 0usize;
    // The inline modules open here, each with the brace depth inside it.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut next_mod: Option<String> = None;
    while let Some(&b) = cursor.bytes.get(cursor.at) {
        let word_starts = (b.is_ascii_alphabetic() || b == b'_')
            && (cursor.at == 0 || !is_word_byte(cursor.bytes[cursor.at - 1]));
        if !word_starts {
            match b {
                b'\n' => cursor.line += 1,
                b'{' => {
                    depth += 1;
                    if let Some(name) = next_mod.take() {
                        inline.push((name, depth));
                    }
                }
                b'}' => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                b';' => next_mod = None,
                _ => {}
            }
            cursor.at += 1;
            continue;
        }
        let word = cursor.word().unwrap_or_default();
        if word == "mod" {
            cursor.skip_space();
            next_mod = cursor.word();
            continue;
        }
        if !matches!(word.as_str(), "crate" | "self" | "super") || !cursor.take("::") {
            continue;
        }
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(name, _)| name.clone()));
        let mut base = match word.as_str() {
            "crate" => Some(crate_root.to_vec()),
            "self" => Some(here),
            _ => here.pop().map(|_| here),
        };
        loop {
            let (at, line) = (cursor.at, cursor.line);
            cursor.skip_space();
            if cursor.word().as_deref() == Some("super") && cursor.take("::") {
                base = base.and_then(|mut b| b.pop().map(|_| b));
            } else {
                (cursor.at, cursor.line) = (at, line);
                break;
            }
        }
        let mut paths = Vec::new();
        cursor.tree(base.as_deref().unwrap_or_default(), &mut paths);
        // `super` above the crate root names nothing (the compiler refuses it).
        if base.is_some() {
            found.extend(paths);
        }
    }
    found
}

/// Puts the crate root in front of a path whose first word is no module of the tree: an item of
/// `lib.rs`. A name the table places but no file holds (the domain crate's modules, which the
/// core's `lib.rs` re-exports) is a module.
fn from_root(modules: &BTreeSet<String>, mut path: Vec<String>) -> Vec<String> {
    if path.first().is_none_or(|first| !modules.contains(first)) {
        path.insert(0, ROOT.to_string());
    }
    path
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

/// The module graph: placed module → the placed modules it imports, each with the first file
/// and line that does (the example a circle is reported with).
type Graph = BTreeMap<String, BTreeMap<String, (String, usize)>>;

/// What the checker found in one tree: upward imports, unplaced modules, and the module graph.
struct Report {
    breaches: Vec<Breach>,
    unplaced: BTreeSet<String>,
    graph: Graph,
}

fn check(root: &Path, layers: Layers) -> Report {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut modules: BTreeSet<String> = files
        .iter()
        .filter_map(|file| module_of(root, file).first().cloned())
        .collect();
    modules.extend(
        layers
            .iter()
            .flat_map(|(_, listed)| listed.iter())
            .filter_map(|listed| listed.split("::").next())
            .filter(|first| *first != ROOT)
            .map(str::to_string),
    );
    let mut report = Report {
        breaches: Vec::new(),
        unplaced: BTreeSet::new(),
        graph: BTreeMap::new(),
    };
    for file in files {
        let module = module_of(root, &file);
        let crate_root = if file.parent() == Some(root) && module == ["main"] {
            module.clone()
        } else {
            Vec::new()
        };
        let Some((from_layer, from_name)) = place(layers, &from_root(&modules, module.clone()))
        else {
            report
                .unplaced
                .insert(from_root(&modules, module).join("::"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, path) in references(&module, &crate_root, &code_only(&text)) {
            let path = from_root(&modules, path);
            let Some((to_layer, to_name)) = place(layers, &path) else {
                continue; // a module nobody placed: reported as its own file is read
            };
            if to_name != from_name {
                report
                    .graph
                    .entry(from_name.clone())
                    .or_default()
                    .entry(to_name.clone())
                    .or_insert_with(|| (file.display().to_string(), line));
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
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
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
        for w in graph.get(v).into_iter().flat_map(BTreeMap::keys) {
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
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// A circle's imports among its own modules, one line each with the first file and line of it.
fn circle_listing(graph: &Graph, circle: &[String]) -> String {
    let mut lines = Vec::new();
    for from in circle {
        for (to, (file, line)) in graph.get(from).into_iter().flatten() {
            if circle.contains(to) {
                lines.push(format!("  {from} -> {to}  ({file}:{line})"));
            }
        }
    }
    lines.join("\n")
}

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn trees() -> Vec<(PathBuf, Layers)> {
    TREES
        .iter()
        .map(|(dir, _, layers)| (workspace().join(dir), *layers))
        .collect()
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

// A name listed in two layers is checked against the lower one only, so the other entry says
// something the test does not keep.
#[test]
fn no_module_is_placed_twice() {
    for (dir, _, layers) in TREES {
        let mut seen = BTreeMap::new();
        let mut twice = Vec::new();
        for (layer, modules) in layers.iter() {
            for module in *modules {
                if let Some(first) = seen.insert(*module, *layer) {
                    twice.push(format!("{module} (in '{first}' and in '{layer}')"));
                }
            }
        }
        assert!(
            twice.is_empty(),
            "modules of {dir} placed twice in tests/module_layers.rs: {twice:?}"
        );
    }
}

// Modules that import each other, in one layer or across, can only be read, tested and changed
// together: no circle is allowed, and each one found is listed with an example of every import
// in it, so it can be cut where it is cheapest.
#[test]
fn no_import_circle_at_all() {
    let mut found = Vec::new();
    for (root, layers) in trees() {
        let report = check(&root, layers);
        for circle in circles(&report.graph) {
            found.push(format!(
                "in {}: {}\n{}",
                root.display(),
                circle.join(", "),
                circle_listing(&report.graph, &circle)
            ));
        }
    }
    assert!(
        found.is_empty(),
        "import circles (cut one import of each: move what it needs below both sides):\n{}",
        found.join("\n")
    );
}

/// Copies the `.rs` files of a tree, keeping their paths.
fn copy_rust_tree(from: &Path, to: &Path) {
    let mut files = Vec::new();
    rust_files(from, &mut files);
    for file in files {
        let target = to.join(file.strip_prefix(from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&file, &target).unwrap();
    }
}

/// The breaches of a report as (file relative to `root`, line, imported path).
fn found_in(root: &Path, report: &Report) -> Vec<(String, usize, String)> {
    report
        .breaches
        .iter()
        .map(|b| {
            let file = Path::new(&b.file).strip_prefix(root).unwrap();
            let file = file.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>();
            (file.join("/"), b.line, b.to.clone())
        })
        .collect()
}

// The real table, not only a planted one, must catch what it exists for: the registry and the
// hook payload are below the adapters (the adapters loop over them, not they over the adapters),
// so either one reaching for the list of adapters is a breach reported at its file and line.
#[test]
fn the_real_table_reports_an_import_of_the_adapters_planted_below_them() {
    const PLANT: &str = "use crate::agents::adapter_of;";
    let src = workspace().join("src");
    for planted_in in ["registry.rs", "hook_payload.rs"] {
        let copy = tempfile::tempdir().unwrap();
        copy_rust_tree(&src, copy.path());
        let before = found_in(copy.path(), &check(copy.path(), CORE));
        let file = copy.path().join(planted_in);
        let mut text = std::fs::read_to_string(&file).unwrap();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let line = text.lines().count() + 1;
        std::fs::write(&file, format!("{text}{PLANT}\n")).unwrap();
        let report = check(copy.path(), CORE);
        let new: Vec<(String, usize, String)> = found_in(copy.path(), &report)
            .into_iter()
            .filter(|b| !before.contains(b))
            .collect();
        assert_eq!(
            new,
            vec![(planted_in.to_string(), line, "agents::adapter_of".to_string())],
            "`{PLANT}` planted at {planted_in}:{line} is reported there and nothing else is new:\n{}",
            listing(&report.breaches)
        );
    }
}

/// The markers around the rendered tables in `docs/architecture.md`.
const DOC: &str = "docs/architecture.md";
const DOC_START: &str = "<!-- layers (generated by tests/module_layers.rs; AGENT_TRAY_BLESS=1 cargo test --test module_layers rewrites it) -->";
const DOC_END: &str = "<!-- /layers -->";

/// The tables as the doc shows them: a fenced block per tree, one line per layer, the highest
/// first (as the doc's picture of the crates stacks them: what imports on top).
fn rendered_tables() -> String {
    let blocks: Vec<String> = TREES
        .iter()
        .map(|(dir, what, layers)| {
            let lines: Vec<String> = layers
                .iter()
                .rev()
                .map(|(name, modules)| format!("{name}: {}\n", modules.join(", ")))
                .collect();
            format!(
                "`{dir}/`, {what}: one line per layer, the highest first; a module imports from \
                 its own line and the lines below it, never from a line above, and never round in \
                 a circle.\n\n```\n{}```\n",
                lines.concat()
            )
        })
        .collect();
    blocks.join("\n")
}

// The doc's picture of the layers is the table, not a second hand-kept copy of it: a change to
// the table fails here until the doc shows it (AGENT_TRAY_BLESS=1 writes it in).
#[test]
fn docs_architecture_shows_the_table() {
    let path = workspace().join(DOC);
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find(DOC_START)
        .unwrap_or_else(|| panic!("{DOC} has no line {DOC_START}"))
        + DOC_START.len();
    let end = start
        + doc[start..]
            .find(DOC_END)
            .unwrap_or_else(|| panic!("{DOC} has no {DOC_END} after {DOC_START}"));
    let want = format!("\n{}", rendered_tables());
    if doc[start..end] == want {
        return;
    }
    if std::env::var_os("AGENT_TRAY_BLESS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    panic!(
        "the layers in {DOC} differ from the tables in tests/module_layers.rs; rewrite them with\n  \
         AGENT_TRAY_BLESS=1 cargo test --test module_layers docs_architecture_shows_the_table\n\
         The tables render as:\n{want}"
    );
}

// The checker itself, on a small tree: one planted upward import each way a path can be written
// (a group, a group over several lines, a chain of `super::`, an item of the crate root), each
// reported at its file and line and nothing else; `self::` and `super::` inside an inline module
// count from that module; comments, strings and test code naming the engine are not imports.
#[test]
fn the_checker_reports_a_planted_breach_by_file_and_line() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path();
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod paths;\npub mod engine;\npub mod store;\npub use crate::paths::TrayPaths;\n\
         /// Where the logs are.\npub struct LogDir;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("paths.rs"),
        "// crate::engine in a comment is no import\n\
         use std::fmt;\n\
         use crate::{env_knobs, engine::Engine};\n\
         const NOTE: &str = \"crate::engine in a string is no import, nor is '{' a brace\";\n\
         use crate::LogDir;\n\
         mod inner {\n    use super::TrayPaths;\n}\n\
         \n#[cfg(test)]\nmod tests {\n    use crate::engine::Other;\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("engine.rs"),
        "use crate::paths::TrayPaths;\nuse crate::store::cli;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/mod.rs"),
        "pub mod cli;\npub mod writer;\nuse crate::paths;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/cli.rs"),
        "use super::Store;\nuse crate::engine::Engine;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("store/writer.rs"),
        "use self::buffer::Buffer;\n\
         use super::{\n    Store as Kept,\n    cli::Args,\n};\n\
         use super::super::engine::Engine;\n\
         mod buffer {\n    use super::super::Store;\n    pub struct Buffer;\n}\n",
    )
    .unwrap();
    const PLANTED: Layers = &[
        ("leaf utilities", &["paths", "env_knobs"]),
        ("adapters and decisions", &["store"]),
        ("engine", &["engine"]),
        ("command line", &["store::cli", "lib"]),
    ];
    let report = check(src, PLANTED);
    let at = |file: &str, line: usize, to: &str| (file.to_string(), line, to.to_string());
    assert_eq!(
        found_in(src, &report),
        vec![
            at("engine.rs", 2, "store::cli"),
            at("paths.rs", 3, "engine::Engine"),
            at("paths.rs", 5, "lib::LogDir"),
            at("store/writer.rs", 4, "store::cli::Args"),
            at("store/writer.rs", 6, "engine::Engine"),
        ],
        "the planted upward imports, and nothing else: {}",
        listing(&report.breaches)
    );
    assert!(report.unplaced.is_empty(), "{:?}", report.unplaced);
    let example = |from: &str, to: &str| {
        report.graph[from]
            .get(to)
            .map(|(file, line)| (Path::new(file).strip_prefix(src).unwrap().to_owned(), *line))
    };
    assert_eq!(example("paths", "lib"), Some(("paths.rs".into(), 5)));
    assert_eq!(example("lib", "paths"), Some(("lib.rs".into(), 4)));
    assert_eq!(
        circles(&report.graph),
        vec![["engine", "lib", "paths", "store", "store::cli"]
            .map(str::to_string)
            .to_vec()],
        "the planted imports close one circle through all five: {}",
        circle_listing(&report.graph, &circles(&report.graph).concat())
    );
}
