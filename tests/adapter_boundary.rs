//! The adapter boundary, enforced: outside `src/agents/` and the catalogue no non-test code
//! names an agent.
//!
//! Everything Agent Tray knows about one coding agent lives in its folder `src/agents/<id>/`
//! and in its row of the catalogue (`src/catalogue.rs`, the plain data: names, colour,
//! processes); the rest of the code asks the catalogue or the adapter. A
//! `match` on an agent, a hard-coded `"claude"` or a field named `codex` elsewhere is the
//! knowledge leaking back out, and the next agent would have to edit it too. This test reads
//! the core (`src/`), the desktop shell (`src-tauri/src/`) and the web UI (`ui/src/`) as text and
//! fails listing every offending line.
//!
//! What counts as naming an agent is taken from the registry itself (each adapter's id, names,
//! aliases, program, process names names), so an agent registered tomorrow is
//! covered without editing this file. Comments may name agents (they explain), test code may
//! (it drives real payloads); code and strings may not. The generated `ui/src/bindings.ts` is
//! the registry exported, not hand-written knowledge. Exceptions are listed in [`ALLOWED`],
//! each with its reason; keep that list tiny.

use std::path::{Path, PathBuf};

use agent_tray::catalogue::entry;
use agent_tray::model::Agent;

/// (file, text on the line, why it may name an agent there).
const ALLOWED: &[(&str, &str, &str)] = &[];

/// The words that name a registered agent, lower-case.
fn agent_words() -> Vec<String> {
    let mut words = Vec::new();
    for &agent in Agent::ALL {
        let a = entry(agent);
        words.push(agent.as_str().to_string());
        words.push(a.display_name.to_string());
        words.push(a.product_name.to_string());
        words.push(a.program.to_string());
        words.extend(agent.aliases().iter().map(|s| s.to_string()));
        words.extend(a.process_names.iter().map(|s| s.to_string()));
    }
    let mut words: Vec<String> = words
        .into_iter()
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| w.len() >= 4)
        .collect();
    words.sort();
    words.dedup();
    words
}

fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, exts, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e))
        {
            out.push(path);
        }
    }
}

/// Each line of a Rust file without its comments, how many braces it opens (minus those it
/// closes) outside string and character literals, and whether it opens any. Strings (raw ones too) may span lines.
fn rust_code_lines(text: &str) -> Vec<(String, i64, bool)> {
    #[derive(PartialEq)]
    enum In {
        Code,
        Str,
        Raw(usize),
        Block(usize),
    }
    let mut state = In::Code;
    let mut out = Vec::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut code = String::new();
        let mut depth = 0i64;
        let mut opens = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match state {
                In::Block(n) => {
                    if c == '*' && next == Some('/') {
                        state = if n == 1 { In::Code } else { In::Block(n - 1) };
                        i += 1;
                    } else if c == '/' && next == Some('*') {
                        state = In::Block(n + 1);
                        i += 1;
                    }
                }
                In::Str => {
                    code.push(c);
                    if c == '\\' {
                        if let Some(n) = next {
                            code.push(n);
                        }
                        i += 1;
                    } else if c == '"' {
                        state = In::Code;
                    }
                }
                In::Raw(hashes) => {
                    code.push(c);
                    if c == '"'
                        && chars[i + 1..].iter().take_while(|h| **h == '#').count() >= hashes
                    {
                        code.extend(std::iter::repeat_n('#', hashes));
                        i += hashes;
                        state = In::Code;
                    }
                }
                In::Code => {
                    if c == '/' && next == Some('/') {
                        break;
                    }
                    if c == '/' && next == Some('*') {
                        state = In::Block(1);
                        i += 2;
                        continue;
                    }
                    let prev_ident =
                        i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
                    if c == 'r' && !prev_ident && matches!(next, Some('#') | Some('"')) {
                        let hashes = chars[i + 1..].iter().take_while(|h| **h == '#').count();
                        if chars.get(i + 1 + hashes) == Some(&'"') {
                            code.push('r');
                            code.extend(std::iter::repeat_n('#', hashes));
                            code.push('"');
                            state = In::Raw(hashes);
                            i += hashes + 2;
                            continue;
                        }
                    }
                    if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                        // A character literal such as '{' or '"'.
                        code.extend(&chars[i..i + 3]);
                        i += 3;
                        continue;
                    }
                    if c == '\'' && next == Some('\\') && chars.get(i + 3) == Some(&'\'') {
                        code.extend(&chars[i..i + 4]);
                        i += 4;
                        continue;
                    }
                    match c {
                        '"' => state = In::Str,
                        '{' => {
                            depth += 1;
                            opens = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                    code.push(c);
                }
            }
            i += 1;
        }
        out.push((code, depth, opens));
    }
    out
}

/// The non-test, non-comment lines of a Rust file, with their numbers: every item under
/// `#[cfg(test)]` or `#[cfg(all(test, ...))]` (a test module, a test-only function) is skipped
/// to its closing brace.
fn rust_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut skipping = false;
    let mut depth: i64 = 0;
    let mut opened = false;
    for (n, (code, delta, opens)) in rust_code_lines(text).into_iter().enumerate() {
        let trimmed = code.trim();
        if !skipping
            && (trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test,"))
        {
            skipping = true;
            depth = 0;
            opened = false;
            continue;
        }
        if skipping {
            depth += delta;
            opened |= opens;
            if (opened && depth <= 0) || (!opened && trimmed.ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if !trimmed.is_empty() {
            out.push((n + 1, code));
        }
    }
    out
}

/// The non-comment lines of a TypeScript, CSS or HTML file.
fn web_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if in_block {
            if t.contains("*/") {
                in_block = false;
            }
            continue;
        }
        if t.starts_with("/*") || t.starts_with("<!--") {
            in_block = !(t.contains("*/") || t.contains("-->"));
            continue;
        }
        if t.starts_with("//") || t.starts_with('*') {
            continue;
        }
        let code = match line.find(" //") {
            Some(i) if !line[..i].contains("http") => &line[..i],
            _ => line,
        };
        out.push((n + 1, code.to_string()));
    }
    out
}

/// Every line outside the adapters that names an agent: "path:line: text".
/// Whether `lower` (a lower-cased line) names `word`: where the word starts a word of the line
/// (not preceded by a letter or digit), so a name found inside an ordinary word (`cline` in
/// `decline`, `ResyncLine`) is not an agent's, while `is_claude`, `ClaudeCode` and `"codex"`
/// still are.
fn names(lower: &str, word: &str) -> bool {
    lower.match_indices(word).any(|(i, _)| {
        !lower[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

fn offending_lines(root: &Path) -> Vec<String> {
    let words = agent_words();
    let mut files = Vec::new();
    files_under(&root.join("src"), &["rs"], &mut files);
    files_under(&root.join("src-tauri/src"), &["rs"], &mut files);
    files_under(&root.join("ui/src"), &["ts", "css"], &mut files);
    for html in ["ui/index.html", "ui/popover.html"] {
        files.push(root.join(html));
    }
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("src/agents/")
            || rel == "src/catalogue.rs"
            || rel == "ui/src/bindings.ts"
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let lines = if rel.ends_with(".rs") {
            rust_lines(&text)
        } else {
            web_lines(&text)
        };
        for (n, code) in lines {
            let lower = code.to_ascii_lowercase();
            let Some(word) = words.iter().find(|w| names(&lower, w)) else {
                continue;
            };
            let allowed = ALLOWED
                .iter()
                .any(|(f, text, _)| *f == rel && code.contains(text));
            if !allowed {
                found.push(format!("{rel}:{n}: [{word}] {}", code.trim()));
            }
        }
    }
    found
}

#[test]
fn no_code_outside_the_adapters_names_an_agent() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = offending_lines(root);
    assert!(
        found.is_empty(),
        "{} line(s) outside src/agents/ and src/catalogue.rs name an agent; move that knowledge \
         into the agent's catalogue row or adapter (src/agents/<id>/) and ask it there:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_an_agent_named_in_code_and_not_in_comments_or_tests() {
    let words = agent_words();
    assert!(words.iter().any(|w| w == "claude"), "{words:?}");
    assert!(words.iter().any(|w| w == "codex"), "{words:?}");
    let text = "fn a() {}\n\
                // Claude Code writes this file.\n\
                let dir = \"~/.claude\"; // the default\n\
                #[cfg(test)]\n\
                mod tests {\n    fn t() { let _ = \"codex\"; }\n}\n\
                let x = Agent::Codex;\n";
    let lines: Vec<usize> = rust_lines(text)
        .into_iter()
        .filter(|(_, code)| {
            let lower = code.to_ascii_lowercase();
            words.iter().any(|w| names(&lower, w))
        })
        .map(|(n, _)| n)
        .collect();
    assert_eq!(lines, vec![3, 8]);
    // A name inside an ordinary word is no agent's; at a word's start it is.
    assert!(!names("handshake::decline", "cline"));
    assert!(!names("struct resyncline {", "cline"));
    assert!(names("let c = agent::cline;", "cline"));
    assert!(names("fn is_claude_helper()", "claude"));
    let css = "/* .agent-claude fallback */\n.agent-codex { color: red; }\n";
    let hits: Vec<usize> = web_lines(css)
        .into_iter()
        .filter(|(_, c)| c.contains("codex") || c.contains("claude"))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(hits, vec![2]);
}
