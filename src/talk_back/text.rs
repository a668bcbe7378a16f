//! The text of a prompt sent to a session, checked before any route sees it.
//!
//! Why these rules: the text goes where the user types (a terminal pane, the agent's own prompt
//! box, its server), so what arrives must be exactly what was meant. A control character typed
//! into a pane is a key (`\x03` is Ctrl-C, `\x1b` starts an escape sequence that can move the
//! cursor or submit half a line): it is refused with a sentence naming it, never passed on or
//! silently dropped. Line ends are the one exception: `\r\n` and `\r` become `\n`, and the whole
//! text stays one prompt (each route says how: a bracketed paste in a terminal, one input item for
//! a server). A leading `/` or `!` is a command in most agents' prompt boxes (a slash command, a
//! shell line); it is sent as text unless the user asked for the command ([`PromptText::command`]),
//! and each route makes sure of that its own way.

use serde::{Deserialize, Serialize};

/// The longest prompt accepted: far more than anyone types, small enough for one control line
/// and one tmux buffer.
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;

/// A prompt that passed the checks: no control character but `\n` (and `\t`), line ends made
/// `\n`, not empty, not over [`MAX_PROMPT_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptText {
    text: String,
    /// The user asked for a leading `/` or `!` to be the agent's command (`--command`).
    command: bool,
}

/// Why a prompt was refused, as a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextRefusal {
    #[error("the text is empty: nothing to send")]
    Empty,
    #[error("the text is {0} bytes; a prompt may be at most {MAX_PROMPT_BYTES}")]
    TooLong(usize),
    #[error(
        "the text holds a control character ({shown}) at character {at}: it would be a key in \
         the agent's terminal, not text; remove it and send again"
    )]
    ControlCharacter { shown: String, at: usize },
    #[error("--command needs a text that begins with / or !")]
    NoCommand,
}

impl PromptText {
    /// Checks `raw`; `command` keeps a leading `/` or `!` as the agent's command.
    pub fn parse(raw: &str, command: bool) -> Result<Self, TextRefusal> {
        if raw.len() > MAX_PROMPT_BYTES {
            return Err(TextRefusal::TooLong(raw.len()));
        }
        let text = raw.replace("\r\n", "\n").replace('\r', "\n");
        // Trailing line ends are how files and `echo` end; they would be empty lines sent on.
        let text = text.trim_end_matches('\n').to_string();
        if text.trim().is_empty() {
            return Err(TextRefusal::Empty);
        }
        if let Some((at, c)) = text
            .chars()
            .enumerate()
            .find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
        {
            return Err(TextRefusal::ControlCharacter {
                shown: c.escape_unicode().to_string(),
                at: at + 1,
            });
        }
        let prompt = PromptText { text, command };
        if command && !prompt.starts_as_command() {
            return Err(TextRefusal::NoCommand);
        }
        Ok(prompt)
    }

    /// The text as the model (or the agent, for a command) is to receive it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the user asked for the agent's command.
    pub fn command(&self) -> bool {
        self.command
    }

    /// Whether the text begins the way an agent's command does (`/`, `!`), after blanks.
    pub fn starts_as_command(&self) -> bool {
        matches!(self.text.trim_start().chars().next(), Some('/' | '!'))
    }

    /// Whether the text is more than one line.
    pub fn is_multiline(&self) -> bool {
        self.text.contains('\n')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_become_newlines_and_trailing_ones_go() {
        let p = PromptText::parse("one\r\ntwo\rthree\n\n", false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.as_str(), "one\ntwo\nthree");
        assert!(p.is_multiline());
    }

    #[test]
    fn a_control_character_is_refused_with_its_name_and_place() {
        for (raw, shown, at) in [
            ("stop\u{3}", "\\u{3}", 5),
            ("\u{1b}[Ago", "\\u{1b}", 1),
            ("a\u{7f}", "\\u{7f}", 2),
            ("x\u{9b}y", "\\u{9b}", 2),
        ] {
            assert_eq!(
                PromptText::parse(raw, false),
                Err(TextRefusal::ControlCharacter {
                    shown: shown.into(),
                    at
                }),
                "{raw:?}"
            );
        }
        assert!(PromptText::parse("tab\tand\nnewline", false).is_ok());
    }

    #[test]
    fn empty_blank_and_oversized_texts_are_refused() {
        assert_eq!(PromptText::parse("", false), Err(TextRefusal::Empty));
        assert_eq!(PromptText::parse(" \n\t\n", false), Err(TextRefusal::Empty));
        let long = "x".repeat(MAX_PROMPT_BYTES + 1);
        assert_eq!(
            PromptText::parse(&long, false),
            Err(TextRefusal::TooLong(MAX_PROMPT_BYTES + 1))
        );
    }

    #[test]
    fn a_command_is_one_only_when_asked_and_only_when_it_looks_like_one() {
        let literal =
            PromptText::parse("/clear the cache", false).unwrap_or_else(|e| panic!("{e}"));
        assert!(literal.starts_as_command() && !literal.command());
        let asked = PromptText::parse("!ls", true).unwrap_or_else(|e| panic!("{e}"));
        assert!(asked.command());
        assert_eq!(
            PromptText::parse("plain words", true),
            Err(TextRefusal::NoCommand)
        );
    }
}
