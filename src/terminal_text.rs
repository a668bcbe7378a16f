//! Text from sessions, made safe for a terminal.
//!
//! Folder names, titles, branches and a remote's error lines are data from outside: printed raw,
//! an escape sequence in one could drive the user's terminal (set the clipboard, rewrite the
//! screen) and a bidi override could make a line read as something else. Every printer of such
//! text (the CLI's tables, `history`, a remote link's error line) goes through here. A leaf:
//! it imports nothing of the crate, so the CLI, the store and the remote links can all use it
//! without depending on each other.

/// True for characters that must not reach a terminal raw: C0 and C1 controls and DEL, and the
/// invisible format characters that reorder or hide text (bidi overrides, zero-width marks).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` with every character [`needs_escape`] names written as `\u{..}`; unchanged (and not
/// copied) when there is none.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A folder named with an OSC 52 sequence would set the clipboard if printed raw; a right-to-
    // left override would make `txt.exe` read as `exe.txt`.
    #[test]
    fn controls_and_invisible_reordering_marks_are_written_as_escapes() {
        assert_eq!(escape_controls("plain /home/dev"), "plain /home/dev");
        assert!(matches!(
            escape_controls("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(escape_controls("a\u{202E}b"), "a\\u{202e}b");
        assert_eq!(
            escape_controls("\u{1b}]52;c;aGk=\u{7}"),
            "\\u{1b}]52;c;aGk=\\u{7}"
        );
    }
}
