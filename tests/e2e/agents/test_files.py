"""Issue 4: discovery from the agents' own files alone (no hooks installed)."""
from e2e_base import ScenarioTest

CLAUDE_TOOL_PROMPT = "SLEEP 2 TOOL touch made-by-tool && sleep 2"


class ClaudeFiles(ScenarioTest):
    def test_claude_from_files_flow(self):
        """Appears with the right cwd; idle -> working -> waiting_for_permission -> idle; /exit -> ended."""
        a = self.setup_claude(hooks=False)
        t0 = self.since()
        a.start()
        a.wait_ready()
        self.wait_state("idle", 10, since=t0, what="discovered from its files (sessions/<pid>.json) in state idle")
        t_prompt = self.since()
        a.prompt(CLAUDE_TOOL_PROMPT)
        self.wait_state("working", 5, since=t_prompt, what="working after the prompt (status busy)")
        t_dialog = a.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 5, since=t_prompt,
                                   what="waiting_for_permission while the dialog is open (status waiting)")
        t_ok = self.since()
        a.approve()
        a.wait_turn_done("done")
        self.wait_state("idle", 10, since=t_ok, what="idle after the turn ended")
        self.assert_pid_is_agent()
        t_exit = self.since()
        a.exit()
        self.wait_state("ended", 10, since=t_exit, what="ended after a clean /exit (sessions file removed)")

    def test_claude_from_files_kill9(self):
        self.assert_killed_mid_turn_ends(self.setup_claude(hooks=False), "status busy")


class CodexFiles(ScenarioTest):
    def test_codex_from_files_flow(self):
        """working -> idle from the rollout; Esc -> idle (turn_aborted); /quit -> ended."""
        a = self.setup_codex(hooks=False, app_server=True)
        a.start()
        a.wait_ready()
        t_prompt = self.since()
        a.prompt("SLEEP 3")
        a.wait_working()
        self.wait_state("working", 5, since=t_prompt, what="working from the rollout (task_started)")
        a.wait_turn_done("ok")
        self.wait_state("idle", 5, since=t_prompt, what="idle after the turn (task_complete)")
        a.prompt("TOOL touch x_file")
        a.wait_permission()
        a.escape()
        a.wait_interrupted()
        self.wait_state("idle", 5, since=self.since(), what="idle after Esc (turn_aborted)")
        self.assert_pid_is_agent()
        t_quit = self.since()
        a.exit()
        self.wait_state("ended", 15, since=t_quit,
                        what="ended after /quit (the TUI is gone; its app-server may still hold the thread lock)")

    def test_codex_from_files_kill9_default_app_server(self):
        self.assert_killed_mid_turn_ends(self.setup_codex(hooks=False, app_server=True), "task_started")

    def test_codex_from_files_kill9_no_daemon(self):
        """--no-daemon: the killed TUI held the thread lock itself; the kernel frees it."""
        self.assert_killed_mid_turn_ends(self.setup_codex(hooks=False, app_server=False), "task_started")
