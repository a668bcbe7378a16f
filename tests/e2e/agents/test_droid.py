"""Factory Droid (the real `droid` 0.215.0 binary) with the hooks `agent-tray install --droid`
writes, run as `droid exec` against the Anthropic mock on 127.0.0.1, and as the agent process its
interactive UI runs, driven in the UI's place (the UI itself needs a Factory login offline:
harness/droid.py says why)."""
import json
import os

from e2e_base import ScenarioTest
from harness.droid import DroidAgent, DroidMock, droid_bin

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Notification", "Stop",
          "SubagentStop", "PreCompact", "SessionEnd")
# The user's own hook, as Droid's /hooks screen writes hooks.json (JSON.stringify, two spaces).
USERS_HOOKS = '{\n  "Stop": [\n    {\n      "hooks": [\n        {\n          "type": "command",\n          "command": "true"\n        }\n      ]\n    }\n  ]\n}'


class DroidHooks(ScenarioTest):
    def setup_droid(self):
        if not droid_bin():
            self.fail("droid not installed: run tests/e2e/agents/install.sh")
        mock = DroidMock(self.world.path("logs", "droid-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = DroidAgent(self.world, mock).configure()
        hooks = os.path.join(self.world.home, ".factory", "hooks.json")
        with open(hooks, "w") as f:
            f.write(USERS_HOOKS)
        self.tray.install("--droid")
        doc = json.load(open(hooks))
        missing = [e for e in EVENTS if self.tray.bin not in json.dumps(doc.get(e, []))]
        self.assertFalse(missing, f"`agent-tray install --droid` did not register {self.tray.bin} for {missing} in {hooks}")
        self.assertEqual(doc["Stop"][0]["hooks"][0]["command"], "true",
                         f"`agent-tray install --droid` lost the user's own Stop hook in {hooks}")
        settings = json.load(open(os.path.join(self.world.home, ".factory", "settings.json")))
        self.assertEqual(settings["customModels"][0]["baseUrl"], self.agent.mock.base_url,
                         "`agent-tray install --droid` touched settings.json, which holds none of our hooks")
        self.tray.start_daemon()
        self.tl = self.timeline()
        return self.agent

    def test_droid_turn_with_a_tool_run(self):
        """`droid exec` listed from SessionStart (starting, its pid the droid process); the model
        runs a command: working (PreToolUse); the turn ends: idle (Stop), then ended
        (SessionEnd, as exec exits)."""
        a = self.setup_droid()
        t0 = self.since()
        # The first reply is held 2 s (listed before any tool); the command itself takes 2 s.
        a.start("SLEEP 2 TOOL sleep 2; echo hi > made-by-tool", auto="medium")
        self.wait_state("starting", 15, since=t0, what="listed as starting once droid exec started (SessionStart)")
        self.assert_pid_is_agent()
        self.wait_state("working", 15, since=t0, what="working while the command runs (PreToolUse)")
        self.wait_state(("idle", "ended"), 15, since=t0, what="idle after the turn (Stop)")
        self.wait_state("ended", 15, since=t0, what="ended as droid exec exits (SessionEnd)")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the command ran")
        self.assert_no_flicker(["starting", "working", "idle", "ended"], ["starting", "working", "ended"])
        self.assert_single_session()

    def test_droid_kill9_mid_turn(self):
        """kill -9 of droid while the model is still answering fires no hook: the pid watcher
        ends the session (its pid is the droid process)."""
        a = self.setup_droid()
        t0 = self.since()
        a.start("SLEEP 60")
        a.wait_ready()
        self.wait_state("starting", 15, since=t0, what="listed once droid exec started (SessionStart)")
        self.assert_pid_is_agent()
        self.assert_ended_after_kill()

    def test_droid_ui_agent_waits_for_permission(self):
        """The UI's agent process (its JSON-RPC mode, driven in the UI's place): the prompt makes
        the session work (UserPromptSubmit), the permission dialog for a command makes it wait
        for permission (Notification permission_prompt); kill -9 of that droid ends it."""
        a = self.setup_droid()
        t0 = self.since()
        a.start_as_ui("TOOL echo hi > made-by-tool")
        self.wait_state("working", 15, since=t0, what="working once the prompt was sent (UserPromptSubmit)")
        self.wait_state("waiting_for_permission", 15, since=t0,
                        what="waiting_for_permission at the dialog (Notification permission_prompt)")
        self.assert_pid_is_agent()
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "nobody approved the command")
        self.assert_ended_after_kill()
