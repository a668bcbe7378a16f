// Session views shaped exactly like the Rust SessionView (see ui/src/bindings.ts).
const SECTION = {
  starting: "idle",
  working: "working",
  waiting_for_permission: "needs_you",
  waiting_for_input: "needs_you",
  idle: "idle",
  ended: "ended",
};
const LABEL = {
  starting: "starting",
  working: "working",
  waiting_for_permission: "needs permission",
  waiting_for_input: "needs input",
  idle: "idle",
  ended: "ended",
};

/// `context`: the row's context as the core words it (tray_model::ContextView), or null.
export function view({ id, agent = "claude", state = "idle", project, secondsInState = 42, context = null, ...fields }) {
  const now = Date.now();
  const since = new Date(now - secondsInState * 1000).toISOString();
  const session = {
    session_id: id,
    agent,
    state,
    cwd: `/home/dev/${project ?? id}`,
    repo: null,
    branch: "main",
    model: agent === "claude" ? "claude-sonnet-4" : "gpt-5-codex",
    transcript_path: null,
    pid: 1234,
    pid_start: null,
    prompted: true,
    streamed: false,
    started_at: "2026-11-29T10:00:00.000Z",
    last_seen: since,
    state_since: since,
    last_event: null,
    last_tool: null,
    error: null,
    waiting_for: null,
    end_reason: state === "ended" ? "process_gone" : null,
    title: null,
    tmux: null,
    tty: null,
    subagents: 0,
    turn_started_at: null,
    headless: false,
    pending: [],
    context_tokens: null,
    context_window: null,
    compacted_at: null,
    blocked_until: null,
    can_send: false,
    can_stop: false,
    ...fields,
  };
  return {
    session,
    project: project ?? id,
    section: SECTION[state],
    state_label: LABEL[state],
    resume_command: agent === "claude" ? `claude --resume ${id}` : `codex resume ${id}`,
    context,
  };
}

/// The core's visible rendering of agent text (domain/src/visible.rs), for the characters these
/// fixtures use: a newline is `⏎` then a line break, a carriage return `␍`, a tab `⇥`, a bidi or
/// zero-width character `<U+202E>`. The page shows `shown.text` as it comes.
export function visibleLines(text) {
  return [...text]
    .map((c) => {
      if (c === "\n") return "⏎\n";
      if (c === "\r") return "␍";
      if (c === "\t") return "⇥";
      if (/[\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF\u0000-\u001F\u007F]/.test(c)) return `<U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`;
      return c;
    })
    .join("");
}

/// A permission request shaped exactly like the Rust PendingView: what `session` waits on.
/// `forSession`: the items "allow for this session" would grant, in words (null: none).
export function request({ id = "r1-a1b2", session, agent = "claude", tool = "Bash", command = null, file_path = null, change_bytes = null, url = null, description = null, cwd = null, input = null, secondsLeft = 240, allowForSession = true, forSession = ["allow `Bash(npm run migrate:*)` for this session"], host = null }) {
  const now = Date.now();
  const what = command ?? url ?? input ?? JSON.stringify({ command, description });
  const text = visibleLines(what);
  const lines = what.split("\n").length;
  return {
    id,
    session_id: session,
    host,
    agent,
    tool,
    command,
    file_path,
    change_bytes,
    url,
    description,
    cwd: cwd ?? `/home/dev/${session}`,
    input: input ?? JSON.stringify({ command, description }),
    asked_at: new Date(now - 12_000).toISOString(),
    answer_by: new Date(now + secondsLeft * 1000).toISOString(),
    kind: "permission",
    accepts: { allow_for_session: allowForSession && forSession !== null, deny_message: true },
    shown: {
      questions: [],
      line: `${tool}: ${text.replaceAll("\n", "")}`,
      text,
      line_count: lines,
      fits_one_line: lines === 1 && text === what && text.length <= 80,
      kind: lines > 1 ? `${tool}: a command of ${lines} lines` : `${tool}: a command of ${what.length} characters`,
      description: description === null ? null : visibleLines(description).replaceAll("\n", ""),
    },
    for_session: forSession === null ? null : { items: forSession.map((t) => ({ kind: "add_rules", text: t })), withheld: null },
  };
}

/// A question as the core lists it (`pending --json`): `questions` as asked, and `shown` as every
/// place shows them (here the same texts: the core makes odd characters visible).
export function questionRequest({ id = "r6-q1", session, agent = "claude", questions, secondsLeft = 240, host = null }) {
  const now = Date.now();
  const full = questions.map((q) => ({ header: null, multi_select: false, allows_other: true, ...q, options: q.options.map((o) => ({ description: null, ...o })) }));
  return {
    id,
    session_id: session,
    host,
    agent,
    kind: "question",
    tool: "AskUserQuestion",
    command: null,
    file_path: null,
    change_bytes: null,
    url: null,
    description: null,
    cwd: `/home/dev/${session}`,
    input: JSON.stringify({ questions }),
    for_session: null,
    questions: host ? null : full,
    asked_at: new Date(now - 12_000).toISOString(),
    answer_by: new Date(now + secondsLeft * 1000).toISOString(),
    accepts: { allow_for_session: false, deny_message: true },
    shown: {
      line: `Question: ${full[0].question}`,
      text: full.map((q) => q.question).join("\n"),
      line_count: full.length,
      fits_one_line: false,
      kind: full.length === 1 ? "a question" : `${full.length} questions`,
      description: null,
      questions: host ? [] : full.map((q) => ({ question: q.question, header: q.header, options: q.options.map((o) => ({ label: o.label, description: o.description })) })),
    },
  };
}

export const defaultSettings = {
  notifications: {
    enabled: true,
    process_died: true,
    needs_permission: true,
    needs_input: true,
    long_turn_finished: true,
    turn_failed: true,
    context_nearly_full: true,
    plan_limit_nearly_used: true,
    long_turn_secs: 30,
    cooldown_secs: 60,
    include_subagents: false,
  },
  menu_bar_counts: true,
  agents: ["claude", "codex"],
  launch_at_login: false,
  repair_hooks_automatically: false,
  session_ttl_secs: null,
  history_days: null,
};

export function sampleSessions() {
  return [
    view({ id: "s-idle", project: "docs-site", state: "idle", secondsInState: 600 }),
    view({ id: "s-work", project: "web_app", agent: "codex", state: "working", last_tool: "exec_command", secondsInState: 75 }),
    view({
      id: "s-perm",
      project: "api-server",
      state: "waiting_for_permission",
      waiting_for: "Bash",
      secondsInState: 12,
      subagents: 2,
      pending: [request({ id: "r7-k3x9", session: "s-perm", command: "npm run migrate -- --env staging", description: "Run the database migrations", cwd: "/home/dev/api-server" })],
    }),
    view({ id: "s-fail", project: "billing", state: "idle", error: "rate_limit", secondsInState: 30 }),
    view({ id: "s-dead", project: "infra", state: "ended", secondsInState: 4, transcript_path: "/home/dev/.claude/projects/x.jsonl" }),
  ];
}
