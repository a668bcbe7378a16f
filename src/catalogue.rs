//! What each agent *is*, as plain data: its names, colour, programs and processes, the variable
//! that moves its folder, the programs known to run its hooks, how its permission requests can
//! be answered, how a session is resumed.
//!
//! Why a table apart from the adapters (`crate::agents`): the view models, the answering rules,
//! the delivery checks and the hook's payload parser all need these constants, and none of them
//! should depend on the adapters, which are built from those same kits (install, doctor, feeds):
//! asking the adapters for a name tied the whole core into one import circle. This module imports
//! only the domain, so everything may read it; what an agent *does* (parse its files, plan its
//! install, check its hooks) stays in its adapter, one floor up.
//!
//! One `match` finds an agent's row ([`entry`]): the domain's [`Agent`] is an exhaustive enum, so
//! a new agent does not compile until it has a row here (and an adapter in `crate::agents`).

use agent_tray_domain::pending::{Accepts, AnswerPath, ReplyShape};

use crate::model::Agent;

/// One agent's row.
#[derive(Debug)]
pub struct Entry {
    /// The agent this row describes (a test checks [`entry`] returns each agent's own row).
    pub agent: Agent,
    /// The short name the window and the tray show ("Claude").
    pub display_name: &'static str,
    /// The product's full name, for sentences (`doctor`, drift alerts): "Claude Code".
    pub product_name: &'static str,
    /// The colour the window shows the agent's name in (a CSS colour, readable on both themes).
    pub colour: &'static str,
    /// The one or two characters of its icon in the window (white on its colour): distinct
    /// between agents whose names start alike (Claude "C", Codex "Cx", Copilot "Cp").
    pub monogram: &'static str,
    /// The program people run (looked up on PATH by `doctor` and `install`).
    pub program: &'static str,
    /// The process names (`comm`) of its native binary, or of a script named after it.
    pub process_names: &'static [&'static str],
    /// Fragments of a launcher's script path (`node …/@google/gemini-cli/…`) that say it is
    /// this agent.
    pub script_markers: &'static [&'static str],
    /// The environment variable that moves its folder, for messages ("CLAUDE_CONFIG_DIR").
    pub config_dir_env: &'static str,
    /// The other programs known to run this agent's hooks as if they were it (Copilot and
    /// Cursor load `.claude/settings.json`): their payloads are told apart and refused.
    pub foreign_callers: &'static [ForeignProgram],
    /// How a permission request can be answered from outside its terminal (`crate::answering`);
    /// `None`: it cannot, and its requests are answered in the terminal only.
    pub answer_path: Option<AnswerPath>,
    /// How an MCP server's form (elicitation) can be answered from outside its terminal;
    /// `None`: in the terminal only.
    pub form_path: Option<AnswerPath>,
    /// A route that answers its requests beside the hook's, whatever `answer_path`'s setting
    /// (what `agent-tray answering` says under the agent).
    pub other_answer_route: Option<&'static str>,
    /// What comes before the (shell-quoted) session id in the command that resumes a session.
    pub resume_prefix: &'static str,
    /// Where its context window is unknown until something is turned on: what to say (shown
    /// beside the tokens instead of a guessed size). `None`: nothing to turn on.
    pub context_window_hint: Option<&'static str>,
    /// How its prompt box takes typed keys, where a prompt or a stop may be typed into its
    /// terminal (`crate::talk_back::terminal`); `None`: never typed into (it has a way in of its
    /// own, or how its prompt box reads keys was not seen).
    pub terminal_talk: Option<TerminalTalk>,
    /// Whether a deny of a request it waits on can also end its turn (Claude Code's
    /// `interrupt`): `agent-tray stop` then answers that request, whatever the terminal.
    pub stop_by_deny: bool,
    /// What Agent Tray does for it here, and whether that was seen with its real binary
    /// (`status --json`, `doctor` and the README's table say exactly this).
    pub support: Support,
}

/// What Agent Tray does for one agent, each point true only where it works here.
///
/// Why plain data beside the behaviour rather than worked out from it: the honest answer mixes
/// what the code can do with what was seen with the agent's real binary (a documented hook that
/// this version never fires is no support), and people read it before installing anything. Tests
/// tie it to the behaviour where the code can tell (an answer path ⇔ `answering`, terminal keys
/// ⇔ `send`), and the README's table to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// Its hook events (or our plugin/extension in it) reach the engine.
    pub hooks: bool,
    /// Its own files (live-session files, transcripts, rollouts, session folders) are read.
    pub files: bool,
    /// Its process is found and watched: a killed agent's session ends.
    pub process: bool,
    /// Its permission requests can be answered from here (`allow`/`deny`, the window, alerts).
    pub answering: bool,
    /// Its questions to the user can be answered from here (`answer`).
    pub questions: bool,
    /// An idle session takes its next prompt from here (`send`).
    pub send: bool,
    /// A running turn can be ended from here (`stop`).
    pub stop: bool,
    /// Its context figure is shown.
    pub context: bool,
    /// How the above was established.
    pub proven: Proven,
}

/// How an agent's support was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proven {
    /// Run here, in tmux against a mock of its model API, by the real-agent suite.
    RealBinary {
        /// The version the suite pins.
        version: &'static str,
    },
    /// Built from its documentation (and its published package where one could be read): it
    /// could not be run here.
    FromDocs {
        /// The version whose documentation or package was read.
        version: &'static str,
        /// Why it was not run ("needs a Factory account").
        why_not_run: &'static str,
    },
}

impl Support {
    /// For people (`status` and `doctor` print it under the agent): what holds, what not, and
    /// how that was established.
    pub fn summary(&self) -> String {
        let label = |point: &str| {
            match point {
                "files" => "its files",
                "process" => "its process",
                "answering" => "permission answers",
                other => other,
            }
            .to_string()
        };
        let (yes, no): (Vec<_>, Vec<_>) = self.points().into_iter().partition(|(_, held)| *held);
        let list = |points: Vec<(&str, bool)>| {
            points
                .into_iter()
                .map(|(p, _)| label(p))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let how = match self.proven {
            Proven::RealBinary { version } => format!("proven with its real binary {version}"),
            Proven::FromDocs {
                version,
                why_not_run,
            } => format!("from its documentation ({version}), not run here: {why_not_run}"),
        };
        let mut text = list(yes);
        if !no.is_empty() {
            text.push_str(&format!("; not {}", list(no)));
        }
        text.push_str(&format!(" ({how})"));
        text
    }

    /// The points, named as `status --json` names them, with whether each holds.
    pub fn points(&self) -> [(&'static str, bool); 8] {
        [
            ("hooks", self.hooks),
            ("files", self.files),
            ("process", self.process),
            ("answering", self.answering),
            ("questions", self.questions),
            ("send", self.send),
            ("stop", self.stop),
            ("context", self.context),
        ]
    }
}

/// How an agent's prompt box reads typed keys (seen with the real binary in tmux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalTalk {
    /// What goes before a text that begins with `!` so the prompt box takes it as text, not
    /// as a shell line; `None`: no way was found (Copilot CLI runs a pasted `!ls` in its shell),
    /// so such a text is refused without `--command`.
    pub literal_lead: Option<&'static str>,
    /// Whether a text that begins with `/` can be typed as words at all (Claude Code runs any
    /// leading `/word` as its command, however it is typed or pasted).
    pub slash_as_text: bool,
    /// The prompt box's line when it is empty (the text right of the last `─` rule above it).
    pub empty_prompt: &'static str,
    /// What the status line under the box says while a turn runs (then nothing is typed).
    pub busy_status: &'static str,
    /// The tmux key names that end a running turn, pressed 150 ms apart (two at once would
    /// read as one Meta key); empty: no stop is typed (none was seen to end a turn the agent
    /// then reports as ended).
    pub stop_keys: &'static [&'static str],
    /// How long after the paste the Enter must come (a prompt box that reads a paste and an
    /// Enter in one burst as all paste drops the Enter); tmux's server presses it, so it comes
    /// even if our side is gone by then.
    pub enter_delay_ms: u64,
}

impl Entry {
    /// Whether payloads claiming to be this agent's are checked for a foreign caller.
    pub fn refuses_foreign_payloads(&self) -> bool {
        !self.foreign_callers.is_empty()
    }

    /// The command that resumes a session (`quoted_id` already shell-quoted).
    pub fn resume_command(&self, quoted_id: &str) -> String {
        format!("{}{quoted_id}", self.resume_prefix)
    }
}

/// A program that runs another agent's hooks (see [`Entry::foreign_callers`]): how its calls are
/// told apart from the host agent's own.
#[derive(Debug)]
pub struct ForeignProgram {
    /// Its stable name on the control socket ("copilot").
    pub id: &'static str,
    /// The name `doctor` shows ("GitHub Copilot CLI").
    pub name: &'static str,
    /// Payload keys only it sends.
    pub payload_keys: &'static [&'static str],
    /// Its process names, when it is the hook's first non-shell ancestor.
    pub process_names: &'static [&'static str],
    /// Environment variables it gives its hooks.
    pub env_vars: &'static [&'static str],
    /// The agent whose hooks it runs.
    pub host: Agent,
    /// Where it finds those hooks, for `doctor` ("a project's .claude/settings.json").
    pub loads_from: &'static str,
}

/// The agent's row: the one `match` over every agent.
pub const fn entry(agent: Agent) -> &'static Entry {
    match agent {
        Agent::Claude => &CLAUDE,
        Agent::Codex => &CODEX,
        Agent::Gemini => &GEMINI,
        Agent::Qwen => &QWEN,
        Agent::Copilot => &COPILOT,
        Agent::OpenCode => &OPENCODE,
        Agent::Pi => &PI,
        Agent::Qoder => &QODER,
        Agent::Auggie => &AUGGIE,
        Agent::Droid => &DROID,
        Agent::Crush => &CRUSH,
        Agent::Cline => &CLINE,
        Agent::Kilo => &KILO,
    }
}

/// An agent's row and name, asked through its id (`agent.display_name()`).
pub trait InCatalogue {
    /// The agent's row.
    fn entry(self) -> &'static Entry;
    /// The name shown to people ("Claude", "Codex").
    fn display_name(self) -> &'static str;
}

impl InCatalogue for Agent {
    fn entry(self) -> &'static Entry {
        entry(self)
    }
    fn display_name(self) -> &'static str {
        entry(self).display_name
    }
}

/// The agent a bare `agent-tray hook` (no `--agent`, no telling payload) stands for: hook lines
/// written before `--agent` existed were Claude Code's.
pub const LEGACY_HOOK_AGENT: Agent = Agent::Claude;

/// The agent whose process this is, by its `comm` name.
pub fn by_process_name(comm: &str) -> Option<Agent> {
    Agent::ALL
        .iter()
        .copied()
        .find(|a| entry(*a).process_names.contains(&comm))
}

/// The agent a launcher's script is (`node /…/@openai/codex/bin/codex.js`, `node /usr/bin/claude`).
pub fn by_script(script: &str) -> Option<Agent> {
    if let Some(agent) = Agent::ALL
        .iter()
        .copied()
        .find(|a| entry(*a).script_markers.iter().any(|m| script.contains(m)))
    {
        return Some(agent);
    }
    let base = script.rsplit('/').next().unwrap_or(script);
    by_process_name(base.strip_suffix(".js").unwrap_or(base))
}

/// Every program known to run another agent's hooks.
pub fn foreign_programs() -> impl Iterator<Item = &'static ForeignProgram> {
    Agent::ALL
        .iter()
        .flat_map(|a| entry(*a).foreign_callers.iter())
}

// --- the rows ---------------------------------------------------------------------------------
// The answer paths' longest waits stay below the hook timeouts each adapter's install writes
// (a test in `crate::agents` checks each against its install's constant).

const CLAUDE: Entry = Entry {
    agent: Agent::Claude,
    display_name: "Claude",
    product_name: "Claude Code",
    colour: "#c15f3c",
    monogram: "C",
    program: "claude",
    process_names: &["claude", "claude.exe"],
    script_markers: &["@anthropic-ai/claude-code"],
    config_dir_env: "CLAUDE_CONFIG_DIR",
    foreign_callers: CLAUDE_FOREIGN_CALLERS,
    // Its `PermissionRequest` hook runs beside the terminal's dialog and the first answer wins
    // (seen with 2.1.332): waiting costs the user nothing, so answering is on by default, and
    // the wait stays 10 s under the 600 s hook timeout `install` writes for that event.
    answer_path: Some(AnswerPath {
        on_by_default: true,
        terminal_stays_open: true,
        default_wait_secs: 300,
        max_wait_secs: 590,
        accepts: Accepts {
            allow_for_session: true,
            deny_message: true,
        },
        reply: ReplyShape::HookSpecificDecision,
    }),
    // An MCP server's form: Claude's `Elicitation` hook can answer it (`action`, `content`), but
    // the terminal shows no form while the hook runs (seen with 2.1.332): opt-in, like Codex's
    // hook route, and held 10 s under the 600 s timeout `install` writes for that event.
    form_path: Some(AnswerPath {
        on_by_default: false,
        terminal_stays_open: false,
        default_wait_secs: 60,
        max_wait_secs: 590,
        accepts: Accepts {
            allow_for_session: false,
            deny_message: false,
        },
        reply: ReplyShape::ElicitationAction,
    }),
    other_answer_route: None,
    resume_prefix: "claude --resume ",
    context_window_hint: Some(
        "window unknown: `agent-tray install --claude --status-line` lets Claude Code's status line tell it",
    ),
    // Seen with 2.1.332 in tmux: a bracketed paste keeps the lines of a text as one prompt; a
    // leading space makes `!` text (kept); `/word` runs as a command however it is typed; the
    // empty box is `❯` and a no-break space, with `esc to interrupt` under it while a turn runs.
    terminal_talk: Some(TerminalTalk {
        literal_lead: Some(" "),
        slash_as_text: false,
        empty_prompt: "❯\u{a0}",
        busy_status: "esc to interrupt",
        stop_keys: &["Escape"],
        enter_delay_ms: 0,
    }),
    stop_by_deny: true,
    support: Support {
        hooks: true,
        files: true,
        process: true,
        answering: true,
        questions: true,
        send: true,
        stop: true,
        context: true,
        proven: Proven::RealBinary { version: "2.1.332" },
    },
};

/// The programs that load Claude Code's hooks and run them as if they were Claude Code.
const CLAUDE_FOREIGN_CALLERS: &[ForeignProgram] = &[
    ForeignProgram {
        id: "cursor",
        name: "Cursor",
        payload_keys: &[
            "conversation_id",
            "generation_id",
            "cursor_version",
            "workspace_roots",
        ],
        process_names: &["cursor-agent", "cursor", "Cursor"],
        env_vars: &["CURSOR_VERSION"],
        host: Agent::Claude,
        loads_from: "a project's .claude/settings.json",
    },
    // Copilot's camelCase fields (and the `timestamp` of its VS Code-compatible shape): keys
    // neither Claude Code nor Codex sends.
    ForeignProgram {
        id: "copilot",
        name: "GitHub Copilot CLI",
        payload_keys: &[
            "sessionId",
            "toolName",
            "toolArgs",
            "toolInput",
            "toolResult",
            "hookName",
            "initialPrompt",
            "transcriptPath",
            "stopReason",
            "timestamp",
        ],
        process_names: &["copilot"],
        env_vars: &["COPILOT_CLI", "COPILOT_HOOK_EVENT"],
        host: Agent::Claude,
        loads_from: "a project's .claude/settings.json",
    },
];

const CODEX: Entry = Entry {
    agent: Agent::Codex,
    display_name: "Codex",
    product_name: "Codex",
    colour: "#10a37f",
    monogram: "Cx",
    program: "codex",
    process_names: &["codex", "codex.exe"],
    script_markers: &["@openai/codex"],
    config_dir_env: "CODEX_HOME",
    foreign_callers: &[],
    // The hook route, for a `--no-daemon` TUI (a default-mode TUI's requests are answered
    // through Codex's server instead: `agents::codex::app_server`). Codex hides its own
    // approval prompt while a `PermissionRequest` hook runs (seen with 0.171): every second of
    // waiting is a second the terminal cannot answer. So it is opt-in, the wait is short, and it
    // ends 1 s before the 5 s hook timeout `install` writes.
    answer_path: Some(AnswerPath {
        on_by_default: false,
        terminal_stays_open: false,
        default_wait_secs: 4,
        max_wait_secs: 4,
        accepts: Accepts {
            allow_for_session: false,
            deny_message: true,
        },
        reply: ReplyShape::HookSpecificDecision,
    }),
    form_path: None,
    other_answer_route: Some("in its default mode (its background server): always answered from here, with no wait (the terminal's dialog stays open); the setting is for `codex --no-daemon`"),
    resume_prefix: "codex resume ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: true,
        process: true,
        answering: true,
        questions: true,
        send: true,
        stop: true,
        context: true,
        proven: Proven::RealBinary { version: "0.171.0" },
    },
};

const GEMINI: Entry = Entry {
    agent: Agent::Gemini,
    display_name: "Gemini",
    product_name: "Gemini CLI",
    colour: "#4285f4",
    monogram: "G",
    program: "gemini",
    process_names: &["gemini"],
    script_markers: &["@google/gemini-cli"],
    config_dir_env: "GEMINI_CLI_HOME",
    foreign_callers: &[],
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "gemini --resume ",
    context_window_hint: None,
    // Seen with 0.61.0 in tmux: a bracketed paste keeps a text's lines as one prompt, but an
    // Enter in the same burst is taken as pasted (dropped): it comes 0.3 s later; a pasted `!`
    // is text (the model receives `!ls`); `/word` runs as a command however it is typed; the
    // empty box is `>   Type your message or @path/to/file`, `esc to cancel` shows while a turn
    // runs, and Esc cancels it.
    terminal_talk: Some(TerminalTalk {
        literal_lead: Some(""),
        slash_as_text: false,
        empty_prompt: ">   Type your message or @path/to/file",
        busy_status: "esc to cancel",
        stop_keys: &["Escape"],
        enter_delay_ms: 300,
    }),
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: true,
        stop: true,
        context: false,
        proven: Proven::RealBinary { version: "0.61.0" },
    },
};

const QWEN: Entry = Entry {
    agent: Agent::Qwen,
    display_name: "Qwen",
    product_name: "Qwen Code",
    colour: "#615ced",
    monogram: "Q",
    program: "qwen",
    process_names: &["qwen"],
    script_markers: &["@qwen-code/qwen-code"],
    config_dir_env: "HOME",
    foreign_callers: &[],
    // Its `PermissionRequest` hook answers in Claude's shape (seen with 0.24.4: an allow runs the
    // tool, a deny does not), but it runs *before* the terminal's dialog opens, so while our hook
    // waits the terminal cannot answer: opt-in, like Codex's hook route, with a one-minute
    // default. The wait may go to 590 s, 10 s under the 600 s `install` writes (as Claude's).
    answer_path: Some(AnswerPath {
        on_by_default: false,
        terminal_stays_open: false,
        default_wait_secs: 60,
        max_wait_secs: 590,
        accepts: Accepts {
            allow_for_session: false,
            deny_message: true,
        },
        reply: ReplyShape::HookSpecificDecision,
    }),
    form_path: None,
    other_answer_route: None,
    resume_prefix: "qwen --resume ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: true,
        process: true,
        answering: true,
        questions: false,
        send: true,
        stop: false,
        context: true,
        proven: Proven::RealBinary { version: "0.24.4" },
    },
};

const COPILOT: Entry = Entry {
    agent: Agent::Copilot,
    display_name: "Copilot",
    product_name: "GitHub Copilot CLI",
    colour: "#8957e5",
    monogram: "Cp",
    program: "copilot",
    process_names: &["copilot"],
    script_markers: &["@github/copilot"],
    config_dir_env: "COPILOT_HOME",
    foreign_callers: &[],
    // Copilot hides its prompt while the hook waits: opt-in, a short wait, ending 1 s before the
    // 5 s `timeoutSec` `install` writes.
    answer_path: Some(AnswerPath {
        on_by_default: false,
        terminal_stays_open: false,
        default_wait_secs: 4,
        max_wait_secs: 4,
        accepts: Accepts {
            allow_for_session: false,
            deny_message: true,
        },
        reply: ReplyShape::Behavior,
    }),
    form_path: None,
    other_answer_route: None,
    resume_prefix: "copilot --resume=",
    context_window_hint: None,
    // Seen with 1.0.102 in tmux: a bracketed paste keeps a text's lines as one prompt (the
    // model receives it after Copilot's own `<current_datetime>` line, as a typed one); a
    // leading `/word` or `!` runs as its command or shell line however it is typed or pasted;
    // the empty box is `❯`; `Working` shows under it while a turn runs. No stop: Esc does not
    // end a turn still waiting for the model, and Esc twice ends it on screen but writes no
    // `abort` and fires no hook, so the row would stay "working" (a ghost we never make).
    terminal_talk: Some(TerminalTalk {
        literal_lead: None,
        slash_as_text: false,
        empty_prompt: "❯",
        busy_status: "Working esc esc",
        stop_keys: &[],
        enter_delay_ms: 300,
    }),
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: true,
        process: true,
        answering: true,
        questions: false,
        send: true,
        stop: false,
        context: true,
        proven: Proven::RealBinary { version: "1.0.102" },
    },
};

const OPENCODE: Entry = Entry {
    agent: Agent::OpenCode,
    display_name: "OpenCode",
    product_name: "OpenCode",
    colour: "#c78a00",
    monogram: "OC",
    program: "opencode",
    process_names: &["opencode"],
    script_markers: &[],
    config_dir_env: "XDG_CONFIG_HOME",
    foreign_callers: &[],
    // OpenCode's dialog stays usable while our plugin waits for an answer, and the first answer
    // wins (seen with 1.18.33): answering is on by default. No hook timeout bounds the plugin,
    // so the longest wait is ours: half an hour. A reply carries no message in its API.
    answer_path: Some(AnswerPath {
        on_by_default: true,
        terminal_stays_open: true,
        default_wait_secs: 300,
        max_wait_secs: 1800,
        accepts: Accepts {
            allow_for_session: true,
            deny_message: false,
        },
        reply: ReplyShape::ReplyWords,
    }),
    form_path: None,
    other_answer_route: None,
    resume_prefix: "opencode --session ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: true,
        questions: true,
        send: true,
        stop: true,
        context: false,
        proven: Proven::RealBinary { version: "1.18.33" },
    },
};

const QODER: Entry = Entry {
    agent: Agent::Qoder,
    display_name: "Qoder",
    product_name: "Qoder CLI",
    colour: "#2f9e6e",
    monogram: "Qd",
    program: "qodercli",
    process_names: &["qodercli"],
    script_markers: &["@qoder-ai/qodercli"],
    config_dir_env: "QODER_CONFIG_DIR",
    foreign_callers: &[],
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "qodercli --resume ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: false,
        proven: Proven::FromDocs {
            version: "1.1.52",
            why_not_run: "needs a Qoder account (\"Not logged in · Please run /login\"; no provider base URL to point at a mock)",
        },
    },
};

const AUGGIE: Entry = Entry {
    agent: Agent::Auggie,
    display_name: "Auggie",
    product_name: "Auggie (Augment Code)",
    colour: "#a61e4d",
    monogram: "A",
    program: "auggie",
    process_names: &["auggie"],
    script_markers: &["@augmentcode/auggie"],
    config_dir_env: "HOME",
    foreign_callers: &[],
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "auggie --resume ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: false,
        proven: Proven::FromDocs {
            version: "0.36.0",
            why_not_run: "needs an Augment account (\"No auth provided. Please log in with `auggie login`\"; it talks only to Augment's own service)",
        },
    },
};

const PI: Entry = Entry {
    agent: Agent::Pi,
    display_name: "Pi",
    product_name: "Pi coding agent",
    // A teal: distinct from the other agents' hues, readable on light and dark backgrounds.
    colour: "#0f8f8f",
    monogram: "π",
    program: "pi",
    // Pi sets its process title to "pi" at start (seen with 0.73.1: `comm` and the whole command
    // line become "pi"); before that it is `node …/@mariozechner/pi-coding-agent/dist/cli.js`.
    process_names: &["pi"],
    script_markers: &["@mariozechner/pi-coding-agent"],
    config_dir_env: "PI_CODING_AGENT_DIR",
    foreign_callers: &[],
    // Pi asks no permission: there is nothing to answer.
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "pi --session ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: true,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: true,
        proven: Proven::RealBinary { version: "0.73.1" },
    },
};

const DROID: Entry = Entry {
    agent: Agent::Droid,
    display_name: "Droid",
    product_name: "Factory Droid",
    colour: "#e8590c",
    monogram: "D",
    program: "droid",
    // A native binary (`@factory/cli-<os>-<arch>/bin/droid`); the npm package's `bin/droid` is
    // a node shim that runs it, so the shim's script names it too.
    process_names: &["droid"],
    script_markers: &["@factory/cli", "node_modules/droid/bin/droid"],
    // It moves the home Droid's `.factory` folder is in, not the folder itself.
    config_dir_env: "FACTORY_HOME_OVERRIDE",
    foreign_callers: &[],
    // Droid has no permission-request hook (0.215.0): its `PreToolUse` decision is honoured but
    // runs before Droid's own permission check, for every tool call, so holding it would hold
    // each call, asked or not. Its requests are answered in its terminal.
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "droid --resume ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: false,
        proven: Proven::RealBinary { version: "0.215.0" },
    },
};

const CRUSH: Entry = Entry {
    agent: Agent::Crush,
    display_name: "Crush",
    product_name: "Crush",
    colour: "#c13ec9",
    monogram: "Cr",
    program: "crush",
    // A native (Go) binary; npm's `@charmland/crush` starts it from `node …/run-crush.js`.
    process_names: &["crush", "crush.exe"],
    script_markers: &["@charmland/crush"],
    config_dir_env: "CRUSH_GLOBAL_CONFIG",
    foreign_callers: &[],
    // Its `PermissionRequest` hook only observes (its output is ignored); the one hook whose
    // answer counts, `PreToolUse`, runs before every tool call whether or not Crush would ask,
    // so waiting there would hold every call. Its requests are answered in its terminal.
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "crush --session ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: false,
        proven: Proven::FromDocs {
            version: "0.96.1",
            why_not_run: "its npm package is a launcher that downloads the binary from GitHub at install, and GitHub is not reachable here",
        },
    },
};

const CLINE: Entry = Entry {
    agent: Agent::Cline,
    display_name: "Cline",
    product_name: "Cline CLI",
    colour: "#d9467a",
    monogram: "Cl",
    program: "cline",
    // The npm package's Node launcher execs the platform package's Bun binary, whose `comm` is
    // `cline`; the same binary runs the hub daemon (`cline --cline-hub-daemon`), which is where
    // the hooks run (seen with 3.0.65).
    process_names: &["cline"],
    script_markers: &["/cline/bin/cline"],
    config_dir_env: "CLINE_DIR",
    foreign_callers: &[],
    // Cline's hooks can only cancel a tool call (PreToolUse `{"cancel": true}`): nothing asks
    // the user through a hook, so nothing is answered from outside its terminal.
    answer_path: None,
    form_path: None,
    other_answer_route: None,
    resume_prefix: "cline --id ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: false,
        questions: false,
        send: false,
        stop: false,
        context: false,
        proven: Proven::RealBinary { version: "3.0.65" },
    },
};

const KILO: Entry = Entry {
    agent: Agent::Kilo,
    display_name: "Kilo",
    product_name: "Kilo Code CLI",
    colour: "#8a8d00",
    monogram: "K",
    program: "kilo",
    // The npm package's native binary (`@kilocode/cli-linux-x64/bin/kilo`); the `kilo` and
    // `kilocode` names on PATH are a node wrapper that starts it, and our plugin runs in it.
    process_names: &["kilo"],
    script_markers: &[],
    config_dir_env: "XDG_CONFIG_HOME",
    foreign_callers: &[],
    // Kilo is a fork of OpenCode and keeps its plugin API: its permission dialog stays usable
    // while our plugin waits, and the first answer wins (seen with 7.7.7), as OpenCode's.
    answer_path: Some(AnswerPath {
        on_by_default: true,
        terminal_stays_open: true,
        default_wait_secs: 300,
        max_wait_secs: 1800,
        accepts: Accepts {
            allow_for_session: true,
            deny_message: false,
        },
        reply: ReplyShape::ReplyWords,
    }),
    form_path: None,
    other_answer_route: None,
    resume_prefix: "kilo --session ",
    context_window_hint: None,
    terminal_talk: None,
    stop_by_deny: false,
    support: Support {
        hooks: true,
        files: false,
        process: true,
        answering: true,
        questions: false,
        send: true,
        stop: true,
        context: false,
        proven: Proven::RealBinary { version: "7.7.7" },
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    // `entry` is the one place an agent finds its row: each row must be its own agent's.
    #[test]
    fn each_agent_finds_its_own_row() {
        for &agent in Agent::ALL {
            assert_eq!(entry(agent).agent, agent);
        }
    }

    #[test]
    fn processes_and_scripts_name_their_agent() {
        assert_eq!(by_process_name("claude.exe"), Some(Agent::Claude));
        assert_eq!(by_process_name("bash"), None);
        assert_eq!(
            by_script("/usr/lib/node_modules/@openai/codex/bin/codex.js"),
            Some(Agent::Codex)
        );
        assert_eq!(by_script("/usr/bin/qwen"), Some(Agent::Qwen));
        assert_eq!(
            by_script("/home/me/.npm-global/lib/node_modules/droid/bin/droid"),
            Some(Agent::Droid)
        );
        assert_eq!(by_script("/tmp/tool.js"), None);
        assert_eq!(by_process_name("pi"), Some(Agent::Pi));
        assert_eq!(
            by_script("/usr/lib/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"),
            Some(Agent::Pi)
        );
        assert_eq!(
            by_script("/usr/lib/node_modules/@charmland/crush/run-crush.js"),
            Some(Agent::Crush)
        );
        assert_eq!(by_process_name("crush"), Some(Agent::Crush));
        assert_eq!(
            entry(Agent::Copilot).resume_command("'a b'"),
            "copilot --resume='a b'"
        );
    }

    // What `status --json` says an agent supports must agree with what the code does where the
    // row itself tells: a way to answer ⇔ "answering", keys typed into its terminal ⇒ "send",
    // a stop typed or a deny that interrupts ⇒ "stop"; and every agent is seen by its process.
    #[test]
    fn support_agrees_with_the_behaviour_the_row_describes() {
        for &agent in Agent::ALL {
            let e = entry(agent);
            let s = &e.support;
            assert_eq!(
                s.answering,
                e.answer_path.is_some(),
                "{agent:?}: `answering` must match its answer path"
            );
            if e.terminal_talk.is_some() {
                assert!(
                    s.send,
                    "{agent:?}: typed into its terminal, so `send` holds"
                );
            }
            let typed_stop = e.terminal_talk.is_some_and(|t| !t.stop_keys.is_empty());
            if typed_stop || e.stop_by_deny {
                assert!(
                    s.stop,
                    "{agent:?}: a stop is typed or denied, so `stop` holds"
                );
            }
            if s.stop && !typed_stop && !e.stop_by_deny {
                assert!(
                    s.send,
                    "{agent:?}: a stop with no keys and no deny goes through its own way in, which also sends"
                );
            }
            assert!(
                !e.process_names.is_empty() || !e.script_markers.is_empty(),
                "{agent:?}: no process name or script marker, so its process cannot be found"
            );
            assert_eq!(
                s.process,
                !e.process_names.is_empty() || !e.script_markers.is_empty()
            );
            if let Proven::FromDocs { why_not_run, .. } = s.proven {
                assert!(
                    !why_not_run.trim().is_empty(),
                    "{agent:?}: say why it was not run"
                );
            }
        }
    }

    #[test]
    fn monograms_tell_every_agent_apart() {
        let mut seen = std::collections::BTreeSet::new();
        for &agent in Agent::ALL {
            let m = entry(agent).monogram;
            assert!(
                (1..=2).contains(&m.chars().count()),
                "{agent:?}: a monogram of one or two characters, not {m:?}"
            );
            assert!(seen.insert(m), "{agent:?}: monogram {m:?} taken twice");
        }
    }
}
