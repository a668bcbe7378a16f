"""Cline CLI 3.0.65: our hook scripts, installed by `agent-tray install --cline` into
$HOME/.cline/hooks/, report its turns; states via `list --json`.

Cline runs a session, and its hooks, in its own process when no hub of its own runs yet (it
starts one in the background for the next sessions), and in that shared hub afterwards:
- first CLI in a fresh HOME: the session's pid is the CLI (the hooks' parent), kill -9 ends it;
  a user's own hook file for the same event keeps running beside ours;
- once the hub runs: the hooks' parent is the hub, which serves every session, so the session is
  listed with no pid.
"""
import os
import time

from e2e_base import ScenarioTest
from harness.cline import AnotherClineAgent, ClineAgent, cline_bin
from harness.mock_chat import ChatMock


class ClineHooks(ScenarioTest):
    def setup_cline(self):
        if not cline_bin():
            self.fail("cline binary not installed: run tests/e2e/agents/install.sh")
        mock = ChatMock(self.world.path("logs", "chat-requests.jsonl")).start()
        self.world.on_cleanup(mock.stop)
        self.agent = ClineAgent(self.world, mock).configure()
        return self.agent

    def install(self):
        self.tray.install("--cline")
        p = os.path.join(self.agent.hooks_dir, "TaskStart.sh")
        text = open(p).read()
        self.assertIn(self.tray.bin, text, f"`agent-tray install --cline` did not name {self.tray.bin} in {p}")
        self.tray.start_daemon()
        self.tl = self.timeline()

    def test_cline_turn_with_a_tool_then_idle_then_kill9_ends(self):
        """prompt -> working (TaskStart), the tool runs (PreToolUse/PostToolUse) and makes its
        file, idle (TaskComplete), the pid is the CLI's; the user's extension-less TaskComplete
        ran too; kill -9 -> ended."""
        a = self.setup_cline()
        os.makedirs(a.hooks_dir, exist_ok=True)
        marker = os.path.join(self.world.root, "users-hook-ran")
        with open(os.path.join(a.hooks_dir, "TaskComplete"), "w") as f:
            f.write(f"#!/bin/sh\ncat >/dev/null\ntouch '{marker}'\n")
        self.assertIsNone(a.hub_pid(), "a hub already ran in this fresh HOME")
        self.install()
        a.start()
        a.wait_ready()
        t = self.since()
        a.prompt("SLEEP 3 TOOL touch made-by-tool")
        a.wait_working()
        self.wait_state("working", 10, since=t, what="working after the prompt (TaskStart)")
        self.wait_state("idle", 30, since=t, what="idle after the turn (TaskComplete)")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the tool's command did not run")
        self.assertTrue(os.path.exists(marker), "the user's own TaskComplete hook did not run beside ours")
        self.assert_pid_is_agent()
        s = self.the_session()
        self.assertRegex(s.get("session_id") or "", r"^\d+_\w+$", "the session is Cline's root session id")
        self.assertEqual(s.get("last_tool"), "run_commands")
        self.assert_single_session()
        self.assert_ended_after_kill()

    def test_cline_session_in_the_shared_hub_has_no_pid_and_uninstall_removes_our_scripts(self):
        a = self.setup_cline()
        self.install()
        # The first CLI starts the hub in the background (its own session runs in its own
        # process); the hub then serves the next ones.
        a.start()
        a.wait_ready()
        deadline = time.monotonic() + 30
        while a.hub_pid() is None:
            if time.monotonic() > deadline:
                self.fail(f"the first cline started no hub; screen:\n{a.screen()}")
            time.sleep(0.2)
        self.assertNotEqual(a.hub_pid(), a.pid)
        t = self.since()
        second = AnotherClineAgent(self.world, a.mock)
        second.start("TOOL touch made-in-hub")
        deadline = time.monotonic() + 40
        while True:
            _, sessions, _ = self.tl.latest()
            hub = [s for s in self.tl.matching(sessions, "cline", a.cwd)
                   if s.get("state") == "idle" and s.get("last_tool") == "run_commands"]
            if hub:
                break
            if time.monotonic() > deadline:
                self.fail("the run through the hub never went idle after its tool\n" + self.tl.describe("cline", a.cwd))
            time.sleep(0.2)
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-in-hub")), "the tool's command did not run")
        self.assertIsNone(hub[0].get("pid"), f"a session run by the shared hub has no pid of its own: {hub[0]}")
        self.tray.run("uninstall", "--cline")
        left = [n for n in os.listdir(a.hooks_dir) if ".agent-tray-backup-" not in n]
        self.assertEqual(left, [], "uninstall must remove our scripts (and leave only their backups)")
