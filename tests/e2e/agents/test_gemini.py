"""Issue 11: Gemini CLI (the real `@google/gemini-cli` 0.61.0) with the hooks
`agent-tray install --gemini` writes, against a mock Gemini API on 127.0.0.1."""
import json
import os

from e2e_base import ScenarioTest
from harness.gemini import GeminiAgent, gemini_js
from harness.mock_gemini import GeminiMock

# The mock holds its first reply 2 s (visibly working), then asks to run a command that needs
# approval; after the command it holds the final reply 2 s (working again).
TOOL_PROMPT = "SLEEP 2 TOOL touch made-by-tool"


class GeminiHooks(ScenarioTest):
    def setup_gemini(self, daemon=True):
        if not gemini_js():
            self.fail("gemini not installed: run tests/e2e/agents/install.sh")
        mock = GeminiMock(self.world.path("logs", "gemini-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = GeminiAgent(self.world, mock).configure()
        self.tray.install("--gemini")
        self.assert_gemini_hooks_installed()
        if daemon:
            self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def assert_gemini_hooks_installed(self):
        p = os.path.join(self.world.home, ".gemini", "settings.json")
        doc = json.load(open(p))
        hooks = doc.get("hooks", {})
        missing = [e for e in ("SessionStart", "BeforeAgent", "BeforeTool", "Notification",
                               "AfterTool", "AfterAgent", "SessionEnd")
                   if self.tray.bin not in json.dumps(hooks.get(e, []))]
        self.assertFalse(missing, f"`agent-tray install --gemini` did not register {self.tray.bin} for {missing} in {p}")
        self.assertEqual(doc["security"]["auth"]["selectedType"], "gemini-api-key",
                         f"`agent-tray install --gemini` lost the user's settings in {p}")
        for never in ("BeforeModel", "AfterModel"):
            self.assertNotIn(never, hooks, f"{never} fires per streamed chunk and must never be registered")

    def test_gemini_full_flow(self):
        """start -> starting (SessionStart); prompt -> working (BeforeAgent); the dialog ->
        waiting_for_permission within 1 s (Notification ToolPermission); approved -> working
        (AfterTool); turn over -> idle (AfterAgent); /quit -> ended (SessionEnd, three times)."""
        a = self.setup_gemini()
        t0 = self.since()
        a.start()
        a.wait_ready()
        self.wait_state("starting", 15, since=t0, what="in state starting after gemini started (SessionStart)")
        t_prompt = self.since()
        a.prompt(TOOL_PROMPT)
        self.wait_state("working", 5, since=t_prompt, what="working after the prompt (BeforeAgent)")
        t_dialog = a.wait_permission()
        t_wfp, _ = self.wait_state("waiting_for_permission", 10, since=t_prompt,
                                   what="waiting_for_permission once the dialog opened (Notification ToolPermission)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "confirmation dialog")
        t_ok = self.since()
        a.approve()
        self.wait_state("working", 5, since=t_ok, what="working again after the approval (AfterTool)")
        a.wait_turn_done("done")
        self.wait_state("idle", 10, since=t_ok, what="idle after the turn ended (AfterAgent)")
        self.assert_pid_is_agent()
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the approved command ran")
        t_exit = self.since()
        a.exit()
        self.wait_state("ended", 10, since=t_exit, what="ended after /quit (SessionEnd)")
        self.assert_single_session()

    def test_gemini_kill9_mid_turn(self):
        """kill -9 of the inner node (the session's process) mid-turn fires no hook: the pid
        watcher ends the session."""
        self.assert_killed_mid_turn_ends(self.setup_gemini(), "hooks")

    def test_gemini_journal_replay_after_daemon_start(self):
        """No app running while the session reaches its permission dialog; then the daemon
        starts: the session shows waiting_for_permission from the journal."""
        a = self.setup_gemini(daemon=False)
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
