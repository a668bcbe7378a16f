"""Issue 4 with hooks installed as well: no duplicate sessions, no flicker."""
from e2e_base import ScenarioTest


class ClaudeHooksAndFiles(ScenarioTest):
    def test_claude_no_duplicates_no_flicker(self):
        a = self.setup_claude(hooks=True)
        a.start()
        a.wait_ready()
        self.wait_state(("starting", "idle"), 10, what="listed after start")
        t = self.since()
        a.prompt("SLEEP 2 TOOL touch made-by-tool && sleep 2")
        self.wait_state("working", 5, since=t)
        a.wait_permission()
        self.wait_state("waiting_for_permission", 5, since=t)
        t_ok = self.since()
        a.approve()
        self.wait_state("working", 5, since=t_ok, what="working again after the approval")
        a.wait_turn_done("done")
        self.wait_state("idle", 10, since=t_ok)
        a.exit()
        self.wait_state("ended", 10, since=self.since())
        self.tl.stop()
        self.assert_single_session()
        self.assert_no_flicker(
            ["starting", "idle", "working", "waiting_for_permission", "working", "idle", "ended"],
            required=["working", "waiting_for_permission", "idle", "ended"])


class CodexHooksAndFiles(ScenarioTest):
    def test_codex_no_duplicates_no_flicker(self):
        a = self.setup_codex(hooks=True, app_server=True)
        a.start()
        a.wait_ready()  # codex writes nothing and fires no hook before the first prompt
        t = self.since()
        a.prompt("SLEEP 2")
        self.wait_state("working", 5, since=t)
        a.wait_turn_done("ok")
        self.wait_state("idle", 5, since=t)
        t = self.since()
        a.prompt("SLEEP 2 TOOL touch x_file")
        self.wait_state("working", 5, since=t)
        a.wait_permission()
        self.wait_state("waiting_for_permission", 5, since=t)
        t_esc = self.since()
        a.escape()
        a.wait_interrupted()
        self.wait_state("idle", 5, since=t_esc)
        a.exit()
        self.wait_state("ended", 15, since=self.since())
        self.tl.stop()
        self.assert_single_session()
        self.assert_no_flicker(
            ["starting", "idle", "working", "idle", "working", "waiting_for_permission", "idle", "ended"],
            required=["working", "waiting_for_permission", "idle", "ended"])
