"""Issue 3: the hook feed, with the real agents. Hooks installed by `agent-tray install`
into the private config dirs, `agent-tray daemon` running, states read from `list --json`."""
import time

from e2e_base import ScenarioTest

# The mock holds its first reply 2 s (the turn is visibly "working"), then asks for a
# command that needs approval; the approved command runs 2 s (working again).
CLAUDE_TOOL_PROMPT = "SLEEP 2 TOOL touch made-by-tool && sleep 2"
CODEX_TOOL_PROMPT = "SLEEP 2 TOOL touch x_file"


class ClaudeHooks(ScenarioTest):
    def test_claude_full_flow(self):
        """start -> starting (then idle from its sessions file); prompt -> working; dialog -> waiting_for_permission within 1 s;
        approve -> working then idle; /exit -> ended."""
        a = self.setup_claude(hooks=True)
        t0 = self.since()
        a.start()
        a.wait_ready()
        _, s = self.wait_state(("starting", "idle"), 10, since=t0, what="listed after claude started")
        self.assert_added_by(s, "starting", "SessionStart", "Hook")
        t_prompt = self.since()
        a.prompt(CLAUDE_TOOL_PROMPT)
        self.wait_state("working", 5, since=t_prompt, what="working after the prompt (UserPromptSubmit)")
        t_dialog = a.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 10, since=t_prompt,
                                   what="waiting_for_permission once the dialog opened (PermissionRequest)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "permission dialog")
        t_ok = self.since()
        a.approve()
        self.wait_state("working", 5, since=t_ok, what="working again after the approval (PostToolUse)")
        a.wait_turn_done("done")
        self.wait_state("idle", 10, since=t_ok, what="idle after the turn ended (Stop)")
        self.assert_pid_is_agent()
        t_exit = self.since()
        a.exit()
        self.wait_state("ended", 10, since=t_exit, what="ended after /exit (SessionEnd)")

    def test_claude_question_shown_as_waiting_for_input(self):
        """The model asks the user a question (AskUserQuestion): waiting_for_input within 1 s
        of the question on screen, never waiting_for_permission; the answer -> working, then
        idle when the turn ends."""
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        t_prompt = self.since()
        a.prompt("ASK Which colour shall the file be?")
        a.wait_for(r"Which colour shall the file be\?", timeout=30, interval=0.05)
        t_question = time.monotonic()
        t_wfi, _ = self.wait_state("waiting_for_input", 10, since=t_prompt,
                                   what="waiting_for_input once the question was on screen")
        self.assert_within(t_wfi, t_question, 1.0, "waiting_for_input", "question")
        states = [st for h in self.tl.history(a.name, a.cwd, since=t_prompt).values() for _, st in h]
        self.assertNotIn("waiting_for_permission", states,
                         "a question is not a permission prompt: %s" % states)
        t_answer = self.since()
        a.answer_question()
        self.wait_state("idle", 10, since=t_answer, what="idle after the answer and the turn's end")

    def test_claude_kill9_mid_turn(self):
        self.assert_killed_mid_turn_ends(self.setup_claude(hooks=True), "hooks")

    def test_claude_journal_replay_after_daemon_start(self):
        """The app down while a session runs into a permission wait; then started: the session
        shows waiting_for_permission from the journal."""
        a = self.setup_claude(hooks=True, daemon=False)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch made-by-tool")
        a.wait_permission()
        t = self.since()
        self.tray.start_daemon()
        self.wait_state("waiting_for_permission", 10, since=t,
                        what="waiting_for_permission after the daemon started (hooks sent while it was down)")
        a.approve()
        a.wait_turn_done("done")
        self.wait_state("idle", 10, since=self.since(), what="idle after the turn, once the daemon runs")


class CodexHooks(ScenarioTest):
    def _flow(self, app_server):
        """prompt -> working; approval -> waiting_for_permission within 1 s;
        Esc -> idle (Interrupt, no Stop); /quit -> ended.

        Codex 0.169's TUI creates its thread lazily: SessionStart fires, and the rollout is
        written, only when the first prompt is submitted (together with UserPromptSubmit),
        so there is no `starting` to observe before the prompt."""
        a = self.setup_codex(hooks=True, app_server=app_server)
        a.start()
        a.wait_ready()
        t_prompt = self.since()
        a.prompt(CODEX_TOOL_PROMPT)
        self.wait_state("working", 5, since=t_prompt, what="working after the first prompt (SessionStart + UserPromptSubmit)")
        t_dialog = a.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 10, since=t_prompt,
                                   what="waiting_for_permission once the approval prompt opened (PermissionRequest)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "approval prompt")
        t_esc = self.since()
        a.escape()
        a.wait_interrupted()
        self.wait_state("idle", 10, since=t_esc, what="idle after Esc at the approval prompt (Interrupt)")
        self.assert_pid_is_agent()
        t_quit = self.since()
        a.exit()
        self.wait_state("ended", 15, since=t_quit, what="ended after /quit")

    def test_codex_full_flow_default_app_server(self):
        self._flow(app_server=True)

    def test_codex_full_flow_no_daemon(self):
        self._flow(app_server=False)

    def test_codex_kill9_mid_turn_default_app_server(self):
        """kill -9 of the TUI; its background app-server lives on (and holds the thread)."""
        self.assert_killed_mid_turn_ends(self.setup_codex(hooks=True, app_server=True), "hooks")

    def test_codex_journal_replay_after_daemon_start(self):
        """Codex's rollout never records the approval wait: only the journal of the
        PermissionRequest hook can say waiting_for_permission here."""
        a = self.setup_codex(hooks=True, daemon=False, app_server=True)
        a.start()
        a.wait_ready()
        a.prompt("TOOL touch x_file")
        a.wait_permission()
        t = self.since()
        self.tray.start_daemon()
        self.wait_state("waiting_for_permission", 10, since=t,
                        what="waiting_for_permission after the daemon started (hooks sent while it was down)")
